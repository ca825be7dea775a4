// Package launch runs a multi-process training job on this host: one
// child process of this executable per rank (its `worker` command),
// joined over loopback TCP, with the center of a scheme that has one (a
// parameter server, `ps`, or a shared buffer server, `smb`) in a process
// of its own and, for an elastic group, the membership coordinator in
// this process. It is what `dsgd train --transport tcp` runs once the
// command has parsed its flags.
//
//	err := launch.Run(ctx, launch.Config{
//		Scheme:  scheme.Config{Name: "sync-ring", Workers: 4},
//		Args:    args, // the children's flags, as the command's own
//		Threads: 1,
//		Stdout:  os.Stdout, Stderr: os.Stderr,
//	})
//
// What Run does for a job:
//   - it picks the rendezvous and the center's address on loopback, a
//     random token for the group (passed to the children through the
//     environment, never their command lines, which other users can
//     read), and strips an external launcher's variables from the
//     children's environment (their ranks are Run's);
//   - rank 0's standard output is the caller's; every child's standard
//     error reaches the caller's as it comes, each line prefixed with its
//     process and each text once however many ranks write it;
//   - under a synchronous scheme a rank that dies takes the group down
//     10 s later at most; under an asynchronous one, or an elastic group,
//     the others train on; a center that dies while the workers run is
//     reported at once with its last words, and the workers are stopped;
//   - once the workers are done, it stops the center, merges the
//     processes' traces (Config.Timeline) and reports each failed rank's
//     error, every line with its rank, or one "interrupted" line with the
//     snapshot's resume hint when a signal stopped the group
//     .
//
// It sits in the training group: it knows the children's command lines
// but parses no flags; its errors name its Config's fields, and the
// command maps them to the flags that set them.
package launch
