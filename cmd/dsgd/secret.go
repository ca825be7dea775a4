package main

// The usage lines of --token and --token-file, shared by the commands
// that serve or join a group.
const (
	tokenUsage     = "shared secret of the group (default: DSGD_TOKEN, else --token-file; required off loopback; visible to other users in the process list, so prefer the environment or a file)"
	tokenFileUsage = "read the shared secret from the first line of `FILE` (default: DSGD_TOKEN_FILE)"
)
