// Package redisstore owns SpeeDO's weight store: float32 vectors (the
// weights W and each worker's W_i) kept in a Redis server, while the
// control messages travel on dsgd's own channel (SpeeDO §2, Fig. 1b:
// workers pull W from Redis, push W_i back, and tell the parameter
// server; the server pulls W_i, merges, and pushes W).
//
// It holds a minimal RESP2 client written on the standard library
// (Client: PING, SET, GET, DEL and a generic Do), and Store, which puts
// and gets []float32 as little-endian bytes and satisfies the parameter
// server's store interface (PutFloats, GetFloats) structurally.
//
// The canonical use, from `--store redis://HOST:PORT[/DB]`:
//
//	st, err := redisstore.Open(ctx, "redis://127.0.0.1:6379", redisstore.Config{Timeout: 5 * time.Second})
//	defer st.Close()
//	err = st.PutFloats(ctx, "w", weights)   // SET w <4*len(weights) bytes>
//	err = st.GetFloats(ctx, "w/3", delta)   // GET into delta; ErrNotFound, ErrWrongSize
//
// A Client (and so a Store) is safe for concurrent use: calls share a
// pool of at most Config.PoolSize connections. Every read and write has
// a deadline (Config.Timeout, shortened by the context's deadline), a
// cancelled context interrupts a call in flight, and a reply larger than
// Config.MaxValue is refused before anything is allocated for it; so a
// dead or hung server yields an error naming its address and the
// command, never a hang. A connection that failed mid-call is closed and
// the next call dials afresh; error replies from the server
// (*ServerError) and ErrNotFound/ErrWrongSize leave it in use.
//
// On little-endian hosts PutFloats and GetFloats move the floats between
// the caller's slice and the socket without an intermediate copy and do
// not allocate in steady state.
package redisstore
