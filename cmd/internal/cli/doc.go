// Package cli is the machinery of dsgd's command line that is not one
// command's:
//
//   - Program: a program of commands run from the command line (its
//     usage, help, version, exit statuses; the nearest command offered
//     for a mistyped one);
//   - ParseFlags: a command's flags parsed, -h printing them (PrintFlags:
//     spelt --name, grouped under headings when there are many), a bad
//     one refused in one line with the nearest flag (DidYouMean) and
//     ErrUsage; SetUnset, a preset of flag values;
//   - Completion: the bash completion script, from the commands' flags;
//   - Version, StartCPUProfile, IsTerminal: the version line from the
//     build information, the CPU profile of a whole command
//     (DSGD_CPUPROFILE), whether output is a terminal.
//
// cmd/dsgd owns the data (its commands, the flag groups, which flags take
// files or a fixed set of values) and passes it in.
package cli
