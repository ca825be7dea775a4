// Package centernet is the center of an asynchronous scheme over the
// network, from both sides: Dial connects a worker process to its center
// (a parameter server of package ps, sharded over several addresses, or
// ShmCaffe's shared buffer server of package smb, smb://HOST:PORT), and
// Serve serves a center.Local as a parameter server, its weights carried
// through a Redis store (package redisstore) when one is named.
//
//	c, closeCenter, err := centernet.Dial(ctx, centernet.DialConfig{Addr: "127.0.0.1:7077", Workers: 4, Weights: w, ...})
//	defer closeCenter()
//
//	err := centernet.Serve(ctx, centernet.ServeConfig{Listen: "0.0.0.0:7077", Center: local, Out: os.Stdout, ...})
//
// It sits in the servers group, beside the servers it connects; the
// training run that uses a center takes it as a dependency, built here
// by the command. Its errors name its configs' fields (DialConfig.Addr,
// ServeConfig.Shard); the command maps them to its flags.
package centernet
