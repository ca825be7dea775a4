// Package syncbuf is a bytes.Buffer that several goroutines may write
// while another reads it: a child process's or a signal watcher's output
// that a test waits on.
package syncbuf
