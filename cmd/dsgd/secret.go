package main

import (
	"fmt"
	"os"
	"strings"
)

// The usage lines of --token and --token-file, shared by the commands
// that serve or join a group.
const (
	tokenUsage     = "shared secret of the group (default: DSGD_TOKEN, else --token-file; required off loopback; visible to other users in the process list, so prefer the environment or a file)"
	tokenFileUsage = "read the shared secret from the first line of `FILE` (default: DSGD_TOKEN_FILE)"
)

// resolveToken returns the group's token: the --token flag, else
// DSGD_TOKEN, else the first line of the --token-file flag's file, else
// of DSGD_TOKEN_FILE's. There is no default: an empty token is for
// loopback only, and the servers and the transport refuse to listen
// beyond loopback without one.
func resolveToken(flagValue, file string, getenv func(string) string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if t := getenv("DSGD_TOKEN"); t != "" {
		return t, nil
	}
	if file == "" {
		file = getenv("DSGD_TOKEN_FILE")
	}
	if file == "" {
		return "", nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("--token-file: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	line = strings.TrimSpace(line)
	if line == "" {
		return "", fmt.Errorf("--token-file %s: the first line is empty", file)
	}
	return line, nil
}
