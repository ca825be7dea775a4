// Package cli is the machinery of dsgd's command line that is not one
// command's: a command's flags parsed with its help and its one-line
// refusals (ParseFlags, ErrUsage), a flag set's help (flags spelt --name,
// grouped under headings when there are many), the "did you mean" suggestion for a
// mistyped command or flag, the bash completion script written from the
// commands' flags, the version line from the build information, and the
// CPU profile of a whole command (DSGD_CPUPROFILE).
//
// cmd/dsgd owns the data (its commands, the flag groups, which flags take
// files or a fixed set of values) and passes it in.
package cli
