// Package db reads and writes the key-value databases Caffe keeps its
// training data in: LMDB (the default of Caffe's tools) and LevelDB.
//
// Both go through the real C libraries (Debian's liblmdb-dev and
// libleveldb-dev, through cgo), so a database written here is one Caffe
// opens and the other way round. Under the purego build tag there is no
// cgo: Open, Scan and Create return an error that names the missing build.
//
// Open gives a DB whose Cursors walk the records in key order, as Caffe's
// cursors do, or seek to a key, reading only what they visit (LMDB maps
// the file; LevelDB reads blocks as needed), so a database larger than
// memory can be read; a DB is opened once per process and shared. Scan
// visits every record in key order; Create
// makes a new database and a Writer fills it, committing in batches as
// Caffe's convert tools do. Errors name the database's path and say what
// is wrong (missing, locked, of the other backend).
package db
