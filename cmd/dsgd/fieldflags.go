package main

import "strings"

// The libraries name the run's settings by their Config fields
// ("Config.Compress bf16 with Config.Workers 1"; train's, and the token
// of rpc's and tcp's, the store of ps's, centernet's DialConfig and
// ServeConfig, training/job's RunOptions, Options, Sums and Files, internal/launcher's
// Placement); the command prints the flags that set them ("--compress
// bf16 with --workers 1"). fieldFlags maps each field (or a phrase of field and value, listed before the
// field alone) to its flag, the phrases worded as the command said them
// before the libraries named fields; a replacer takes the first entry
// that matches at each point of the message.
var fieldFlags = []string{
	// training/job's RunOptions, a field to each train flag
	"RunOptions.Iters", "--iters", "RunOptions.TestIter", "--test-iter", "RunOptions.TestInterval", "--test-interval",
	"RunOptions.Display", "--display", "RunOptions.Workers", "--workers", "RunOptions.Warmup", "--warmup",
	"RunOptions.Staleness", "--staleness", "RunOptions.Groups", "--groups", "RunOptions.Bucket", "--bucket",
	"RunOptions.Atom", "--atom", "RunOptions.Interval", "--interval", "RunOptions.TimeBudget", "--time-budget",
	"RunOptions.CommTimeout", "--comm-timeout", "RunOptions.RoundDeadline", "--round-deadline",
	"RunOptions.MaxUpdateNorm", "--max-update-norm", "RunOptions.Momentum", "--momentum", "RunOptions.Variant", "--variant",
	"RunOptions.Scheme", "--scheme", "RunOptions.Allreduce", "--allreduce", "RunOptions.Finish", "--finish",
	"RunOptions.Compress", "--compress", "RunOptions.LRScale", "--lr-scale", "RunOptions.Transport", "--transport",
	"RunOptions.Straggle", "--straggle", "RunOptions.Reduce", "--reduce", "RunOptions.SnapshotFormat", "--snapshot-format",
	"RunOptions.Store", "--store", "RunOptions.ElasticCoordinator", "--elastic-coordinator", "RunOptions.Elastic", "--elastic",
	"RunOptions.OuterBits", "--outer-bits", "RunOptions.Shm", "--shm",
	"RunOptions.MetricsListen", "--metrics-listen",
	"Config.Resume", "--resume",
	"Config.Weights", "--weights",
	"Config.CompressWarmup", "--compress-warmup",
	"Config.Compress", "--compress",
	"use float sums (Config.Exact false)", "use --reduce fast",
	"Config.Exact false", "--reduce fast",
	"Config.Exact", "--reduce exact",
	"Sums.Reduce", "--reduce",
	"Sums.Atom", "--atom",
	"Config.Workers", "--workers",
	"Config.ScaleLR rule", "--lr-scale",
	"Config.TestIter", "--test-iter",
	"Config.Name", "--scheme",
	"Config.Interval", "--interval",
	"Config.Alpha", "--alpha",
	"Config.OuterMomentum", "--outer-momentum",
	"Options.Alpha", "--alpha",
	"Options.Rho", "--rho",
	"Config.Fragments", "--fragments",
	"Config.Overlap", "--overlap",
	"Config.OuterBits", "--outer-bits",
	"Config.Mix", "--mix",
	"Config.Aligned", "--finish",
	"Config.Elastic", "--elastic",
	"Config.GPUs", "--gpu",
	"Config.SnapshotPrefix (or none)", "--snapshot-prefix (or \"none\")",
	"Config.SnapshotPrefix", "--snapshot-prefix",
	"runs in one process only (no Config.Group)", "runs with --transport inproc only",
	"a multi-process group (Config.Group) across", "--transport tcp across",
	"Config.Group", "--transport tcp",
	"Config.Token", "--token or DSGD_TOKEN",
	"same store (ClientConfig.Store, ServerConfig.Store)", "same --store",
	"DialConfig.Addr", "--center",
	"DialConfig.Store", "--store",
	"ServeConfig.Store", "--store",
	"ServeConfig.Shard", "--shard",
	"set Placement.Rank and Placement.World", "pass --rank and --world",
	"set Placement.Rendezvous to HOST:PORT (an address of rank 0's host that every rank reaches) with a listen address every rank reaches and a shared token",
	"pass --rendezvous HOST:PORT (an address of rank 0's host that every rank reaches), --listen 0.0.0.0:0 and a shared secret in DSGD_TOKEN (mpirun -x DSGD_TOKEN; srun passes the environment)",
	"set Placement.Rendezvous to", "pass --rendezvous",
	"Placement.Rendezvous", "--rendezvous",
	"Placement.Rank", "--rank",
	"Placement.World", "--world",
	"Secret.TokenFile", "--token-file",
	"Files.Metrics", "--metrics",
	"Files.Log", "--log",
	"Files.Timeline", "--timeline",
	"Options.Model", "--model",
	"Options.Net", "--net",
	"Options.Solver", "--solver",
	"Options.Data", "--data",
	"Options.Batch", "--batch",
	"Options.Shuffle", "--shuffle",
}

// testFieldFlags is dsgd test's table: the snapshot it resumes from is
// its --weights.
var testFieldFlags = append([]string{"Config.Resume", "--weights"}, fieldFlags...)

// simulateFieldFlags is dsgd simulate's table: simulator/study's
// Config, then the job's options.
var simulateFieldFlags = append([]string{
	"Config.Schemes", "--scheme",
	"Config.Iters", "--iters",
	"Config.Warmup", "--warmup",
	"Config.Repeat", "--repeat",
	"Config.BucketKiB", "--bucket",
	"Config.Groups", "--groups",
	"Config.Alpha", "--alpha",
	"Config.RoundDeadline", "--round-deadline",
	"Config.Params", "--params",
	"Config.ComputeMS", "--compute-ms",
	"Config.Layers", "--layers",
	"Config.Cores", "--cores",
	"Config.Timeline", "--timeline",
}, fieldFlags...)

var (
	trainFlagNames    = strings.NewReplacer(fieldFlags...)
	testFlagNames     = strings.NewReplacer(testFieldFlags...)
	simulateFlagNames = strings.NewReplacer(simulateFieldFlags...)
)

// flagNamesFor is command name's table.
func flagNamesFor(name string) *strings.Replacer {
	switch name {
	case "test":
		return testFlagNames
	case "simulate":
		return simulateFlagNames
	}
	return trainFlagNames
}

// flagError is a library error whose message names the command's flags
// instead of the Config fields they set; it unwraps to the original, so
// errors.Is and errors.As see through it.
type flagError struct {
	err error
	msg string
}

func (e *flagError) Error() string { return e.msg }
func (e *flagError) Unwrap() error { return e.err }

// asFlags returns err with the Config fields in its message renamed to
// flags by r; err itself when it names none.
func asFlags(err error, r *strings.Replacer) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if out := r.Replace(msg); out != msg {
		return &flagError{err: err, msg: out}
	}
	return err
}
