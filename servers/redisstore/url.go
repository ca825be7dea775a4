package redisstore

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// Endpoint is a parsed store URL: where the Redis server listens, which
// logical database to select and how to authenticate.
type Endpoint struct {
	// Addr is HOST:PORT, ready for net.Dial ("[::1]:6379" for IPv6).
	Addr string
	// DB is the logical database selected after connecting (0 when the
	// URL has no /DB path).
	DB int
	// Username is the ACL user for AUTH; empty means the default user.
	Username string
	// Password is sent with AUTH when non-empty.
	Password string
}

// String returns the endpoint as a redis:// URL with the password
// redacted, suitable for logs and error messages.
func (e Endpoint) String() string {
	var b strings.Builder
	b.WriteString("redis://")
	if e.Password != "" {
		b.WriteString(url.PathEscape(e.Username))
		b.WriteString(":xxxxx@")
	}
	b.WriteString(e.Addr)
	if e.DB != 0 {
		b.WriteString("/")
		b.WriteString(strconv.Itoa(e.DB))
	}
	return b.String()
}

// ParseURL parses a store URL of the form
//
//	redis://HOST:PORT[/DB]
//	redis://:PASSWORD@HOST:PORT[/DB]
//	redis://USER:PASSWORD@HOST:PORT[/DB]
//
// strictly: the scheme must be redis, the port must be explicit and in
// 1..65535, DB must be a non-negative decimal integer, and queries,
// fragments and a user name without a password are rejected. The error
// names the URL (with any password redacted) and what is wrong.
func ParseURL(raw string) (Endpoint, error) {
	switch {
	case raw == "":
		return Endpoint{}, fmt.Errorf("redisstore: bad store URL %q: empty, want redis://HOST:PORT[/DB]", raw)
	case !strings.Contains(raw, "://"):
		return Endpoint{}, fmt.Errorf("redisstore: bad store URL %q: want redis://HOST:PORT[/DB]", redactRaw(raw))
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error quotes the URL itself, password included; name only
		// the part of it that cannot leak a secret.
		var msg = err.Error()
		if ue, ok := err.(*url.Error); ok {
			msg = ue.Err.Error()
		}
		return Endpoint{}, fmt.Errorf("redisstore: bad store URL %q: %s", redactRaw(raw), msg)
	}
	bad := func(format string, args ...any) (Endpoint, error) {
		return Endpoint{}, fmt.Errorf("redisstore: bad store URL %q: %s", redactRaw(raw), fmt.Sprintf(format, args...))
	}
	switch {
	case u.Scheme == "rediss":
		return bad("TLS (rediss://) is not supported, use redis://")
	case u.Scheme != "redis":
		return bad("scheme is %q, want redis", u.Scheme)
	case u.RawQuery != "" || u.ForceQuery:
		return bad("query parameters are not supported")
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return bad("fragments are not supported")
	case u.Host == "":
		return bad("missing HOST:PORT")
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		return bad("missing port, want HOST:PORT")
	}
	if host == "" {
		return bad("missing host")
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 || port[0] == '+' {
		return bad("port %q is not a number in 1..65535", port)
	}
	e := Endpoint{Addr: net.JoinHostPort(host, port)}
	if u.User != nil {
		pw, ok := u.User.Password()
		if !ok {
			return bad("user name without a password, want redis://:PASSWORD@HOST:PORT")
		}
		if pw == "" {
			return bad("empty password")
		}
		e.Username, e.Password = u.User.Username(), pw
	}
	switch path := u.Path; {
	case path == "" || path == "/":
	default:
		db := path[1:]
		n, err := strconv.Atoi(db)
		if err != nil || n < 0 || db[0] == '+' || db[0] == '-' {
			return bad("database %q is not a non-negative integer", db)
		}
		e.DB = n
	}
	return e, nil
}

// redactRaw hides whatever sits between "://" and the last '@' of a URL
// that url.Parse rejected, so a password never reaches an error message.
func redactRaw(raw string) string {
	i := strings.Index(raw, "://")
	if i < 0 {
		return raw
	}
	rest := raw[i+3:]
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return raw
	}
	return raw[:i+3] + "xxxxx" + rest[at:]
}
