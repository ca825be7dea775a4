package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"dsgd/engine/cuda"
)

// runDeviceQuery is caffe device_query: each GPU that --gpu names, with
// Caffe's lines, then the driver and the libraries dsgd would load.
func runDeviceQuery(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("device-query", flag.ContinueOnError)
	gpu := fs.String("gpu", "", "Caffe's -gpu `IDS`: the GPUs to describe (0, 0,1 or all; required, as Caffe's \"Need a device ID to query\")")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if *gpu == "" {
		fmt.Fprintln(stderr, "dsgd device-query: need a device ID to query: --gpu 0, --gpu 0,1 or --gpu all")
		return errUsage
	}
	in, err := cuda.Probe()
	if err != nil {
		return fmt.Errorf("--gpu %s: %w", *gpu, err)
	}
	ids, err := cuda.ParseIDs(*gpu, len(in.Devices))
	if err != nil {
		return err
	}
	for _, id := range ids {
		props, err := cuda.Query(id)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "Querying GPU %d\n%s", id, cuda.FormatQuery(props))
	}
	fmt.Fprintf(stdout, "Driver: CUDA %s\ncuBLAS: %s\ncuDNN:  %s\n", in.DriverVersion(), in.CUBLAS, in.CUDNN)
	for _, l := range in.Libs {
		fmt.Fprintf(stdout, "loaded: %s\n", l)
	}
	return nil
}
