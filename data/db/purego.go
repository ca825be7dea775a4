//go:build purego

package db

import "fmt"

func missing(path string, b Backend) error {
	pkg := map[Backend]string{LMDB: "liblmdb-dev", LevelDB: "libleveldb-dev"}[b]
	return fmt.Errorf("%s database %s: this dsgd was built with -tags purego, without the %s C library; rebuild without purego (apt-get install %s)", b, path, b, pkg)
}

func openLMDBReader(path string) (handle, error) { return nil, missing(path, LMDB) }

func openLevelDBReader(path string) (handle, error) { return nil, missing(path, LevelDB) }

func createLMDB(path string) (Writer, error) { return nil, missing(path, LMDB) }

func createLevelDB(path string) (Writer, error) { return nil, missing(path, LevelDB) }
