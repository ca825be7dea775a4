//go:build purego

package pylayer

import "errors"

// errPurego is why a purego build runs no Python layer.
var errPurego = errors.New("pylayer: Python layers need CPython opened at run time through cgo (dlopen), and this dsgd was built with the purego tag, which has no cgo: build without -tags purego to run them")

// Libraries are the libpython sonames a cgo build tries; a purego build
// opens none.
var Libraries []string

func start() error { return errPurego }

func callPy([]byte) ([]byte, error) { return nil, errPurego }

// Available reports whether Python layers can run here: never under the
// purego tag.
func Available() error { return errPurego }
