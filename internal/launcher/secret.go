package launcher

import (
	"fmt"
	"os"
	"strings"
)

// Secret is a group's shared secret as a command is given it: Token
// itself, or TokenFile, whose first line holds it. Errors name its fields
// ("Secret.TokenFile"); a command maps them to its flags.
type Secret struct {
	Token, TokenFile string
}

// Resolve returns the group's token: Token, else DSGD_TOKEN, else the
// first line of TokenFile, else of DSGD_TOKEN_FILE's file. There is no
// default: an empty token is for loopback only, and the servers and the
// transport refuse to listen beyond loopback without one.
func (s Secret) Resolve(getenv func(string) string) (string, error) {
	if s.Token != "" {
		return s.Token, nil
	}
	if t := getenv("DSGD_TOKEN"); t != "" {
		return t, nil
	}
	file := s.TokenFile
	if file == "" {
		file = getenv("DSGD_TOKEN_FILE")
	}
	if file == "" {
		return "", nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("Secret.TokenFile: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	line = strings.TrimSpace(line)
	if line == "" {
		return "", fmt.Errorf("Secret.TokenFile %s: the first line is empty", file)
	}
	return line, nil
}
