// Package db reads and writes the key-value databases Caffe keeps its
// training data in: LMDB (the default of Caffe's tools) and LevelDB.
//
// Both go through the real C libraries (Debian's liblmdb-dev and
// libleveldb-dev, through cgo), so a database written here is one Caffe
// opens and the other way round. Under the purego build tag there is no
// cgo: Scan and Create return an error that names the missing build.
//
// Scan visits every record in key order, as Caffe's cursors do; Create
// makes a new database and a Writer fills it, committing in batches as
// Caffe's convert tools do. Errors name the database's path and say what
// is wrong (missing, locked, of the other backend).
package db
