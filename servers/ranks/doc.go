// Package ranks is a server's record of which connection holds each
// worker rank, shared by the parameter server (package ps, at a worker's
// Join) and ShmCaffe's buffer server (package smb, at a rank claim): both
// tell two live workers started with the same --rank apart from a
// restarted worker taking its rank back, by tying the rank to the
// connection it came over and freeing it when that connection ends.
//
// A Table holds no lock of its own: the server's mutex, which guards the
// rest of what it knows of its workers, guards the Table too, and Await
// lets it go while it waits for a holder's connection to end.
package ranks
