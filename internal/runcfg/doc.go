// Package runcfg is the run configuration that the processes of one job
// must agree on, as name=value pairs: rank 0 sends it to the other ranks of
// a group (package train), a worker sends it to the parameter server when
// it joins (package ps), and each side names the first setting that
// differs with both values.
package runcfg
