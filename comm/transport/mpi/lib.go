//go:build !purego

package mpi

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

// Open MPI is opened at run time rather than linked (see doc.go): the
// prototypes below are MPI's C API with Open MPI 4's handle types (every
// handle is a pointer to an internal struct; the predefined ones such as
// MPI_COMM_WORLD are the addresses of exported objects) and its public
// MPI_Status layout. No header is needed to build.
typedef void *Comm;
typedef void *Datatype;
typedef void *Request;
typedef void *Op;
typedef void *Errhandler;
typedef struct {
	int source, tag, error, cancelled;
	size_t ucount;
} Status;

enum { THREAD_MULTIPLE = 3, TAG_UB_KEY = 0, MAX_ERROR_STRING = 256, ERR_IN_STATUS = 18, UNDEFINED = -32766 };
#define IN_PLACE ((const void *)1) // MPI_IN_PLACE

static int (*p_init_thread)(int *, char ***, int, int *);
static int (*p_initialized)(int *);
static int (*p_finalized)(int *);
static int (*p_finalize)(void);
static int (*p_comm_rank)(Comm, int *);
static int (*p_comm_size)(Comm, int *);
static int (*p_comm_dup)(Comm, Comm *);
static int (*p_comm_free)(Comm *);
static int (*p_comm_set_errhandler)(Comm, Errhandler);
static int (*p_comm_get_attr)(Comm, int, void *, int *);
static int (*p_isend)(const void *, int, Datatype, int, int, Comm, Request *);
static int (*p_irecv)(void *, int, Datatype, int, int, Comm, Request *);
static int (*p_test)(Request *, int *, Status *);
static int (*p_testsome)(int, Request *, int *, int *, Status *);
static int (*p_cancel)(Request *);
static int (*p_request_free)(Request *);
static int (*p_get_count)(const Status *, Datatype, int *);
static int (*p_allreduce)(const void *, void *, int, Datatype, Op, Comm);
static int (*p_bcast)(void *, int, Datatype, int, Comm);
static int (*p_reduce)(const void *, void *, int, Datatype, Op, int, Comm);
static int (*p_barrier)(Comm);
static int (*p_error_string)(int, char *, int *);
static int (*p_get_library_version)(char *, int *);

static Comm c_world, c_self;
static Datatype t_float, t_byte;
static Op op_sum;
static Errhandler eh_return;

#define SYM(var, name) do { *(void **)(&var) = dlsym(h, name); if (!var) return "symbol " name " not found"; } while (0)

// dsgd_mpi_bind resolves every entry point and predefined handle in the
// library h. It returns NULL on success, else what failed.
static const char *dsgd_mpi_bind(void *h) {
	if (!dlsym(h, "ompi_mpi_comm_world")) {
		return "not Open MPI (no ompi_mpi_comm_world): dsgd's MPI transport speaks Open MPI's ABI";
	}
	SYM(p_init_thread, "MPI_Init_thread");
	SYM(p_initialized, "MPI_Initialized");
	SYM(p_finalized, "MPI_Finalized");
	SYM(p_finalize, "MPI_Finalize");
	SYM(p_comm_rank, "MPI_Comm_rank");
	SYM(p_comm_size, "MPI_Comm_size");
	SYM(p_comm_dup, "MPI_Comm_dup");
	SYM(p_comm_free, "MPI_Comm_free");
	SYM(p_comm_set_errhandler, "MPI_Comm_set_errhandler");
	SYM(p_comm_get_attr, "MPI_Comm_get_attr");
	SYM(p_isend, "MPI_Isend");
	SYM(p_irecv, "MPI_Irecv");
	SYM(p_test, "MPI_Test");
	SYM(p_testsome, "MPI_Testsome");
	SYM(p_cancel, "MPI_Cancel");
	SYM(p_request_free, "MPI_Request_free");
	SYM(p_get_count, "MPI_Get_count");
	SYM(p_allreduce, "MPI_Allreduce");
	SYM(p_bcast, "MPI_Bcast");
	SYM(p_reduce, "MPI_Reduce");
	SYM(p_barrier, "MPI_Barrier");
	SYM(p_error_string, "MPI_Error_string");
	SYM(p_get_library_version, "MPI_Get_library_version");
	SYM(c_world, "ompi_mpi_comm_world");
	SYM(c_self, "ompi_mpi_comm_self");
	SYM(t_float, "ompi_mpi_float");
	SYM(t_byte, "ompi_mpi_byte");
	SYM(op_sum, "ompi_mpi_op_sum");
	SYM(eh_return, "ompi_mpi_errors_return");
	return NULL;
}

// dsgd_mpi_init initialises MPI for multi-threaded use and makes errors
// on the predefined communicators return codes instead of aborting.
static int dsgd_mpi_init(int *provided, int *already) {
	int flag = 0, rc;
	if ((rc = p_initialized(&flag)) != 0) return rc;
	*already = flag;
	if (!flag) {
		int argc = 0;
		char **argv = NULL;
		if ((rc = p_init_thread(&argc, &argv, THREAD_MULTIPLE, provided)) != 0) return rc;
	}
	if ((rc = p_comm_set_errhandler(c_world, eh_return)) != 0) return rc;
	return p_comm_set_errhandler(c_self, eh_return);
}

static int dsgd_mpi_finalize(void) {
	int flag = 0;
	p_finalized(&flag);
	return flag ? 0 : p_finalize();
}

static int dsgd_mpi_world_shape(int *rank, int *size) {
	int rc = p_comm_rank(c_world, rank);
	return rc ? rc : p_comm_size(c_world, size);
}

// dsgd_mpi_dup duplicates the world (self == 0) or self communicator.
static int dsgd_mpi_dup(int self, Comm *out) { return p_comm_dup(self ? c_self : c_world, out); }
static int dsgd_mpi_free(Comm c) { return p_comm_free(&c); }
static int dsgd_mpi_rank(Comm c, int *rank) { return p_comm_rank(c, rank); }

static int dsgd_mpi_tag_ub(Comm c, int *ub) {
	int *v = NULL, flag = 0;
	int rc = p_comm_get_attr(c, TAG_UB_KEY, &v, &flag);
	if (rc) return rc;
	*ub = (flag && v) ? *v : 32767; // the standard's minimum
	return 0;
}

static int dsgd_mpi_isend(const void *buf, int count, int bytes, int dest, int tag, Comm c, Request *req) {
	return p_isend(buf, count, bytes ? t_byte : t_float, dest, tag, c, req);
}

static int dsgd_mpi_irecv(void *buf, int count, int bytes, int src, int tag, Comm c, Request *req) {
	return p_irecv(buf, count, bytes ? t_byte : t_float, src, tag, c, req);
}

// dsgd_mpi_poll tests the n requests in reqs with MPI_Testsome up to
// rounds times (each try drives MPI's progress engine; with yield, the
// core goes to other runnable threads between tries), stopping at the
// first try that completes any. *out is how many completed; for each,
// idx[k] its index, count[k] the bytes received, cancelled[k] and err[k]
// (MPI's code for that request when the call returns ERR_IN_STATUS).
static int dsgd_mpi_poll(Request *reqs, int n, int rounds, int yield, Status *st, int *idx, int *count,
                         int *cancelled, int *err, int *out) {
	*out = 0;
	for (int i = 0; i < rounds; i++) {
		if (yield && i > 0) sched_yield();
		int rc = p_testsome(n, reqs, out, idx, st);
		if (*out == UNDEFINED) *out = 0;
		if (rc && rc != ERR_IN_STATUS) return rc;
		if (*out > 0) {
			for (int k = 0; k < *out; k++) {
				count[k] = 0;
				cancelled[k] = st[k].cancelled;
				err[k] = rc == ERR_IN_STATUS ? st[k].error : 0;
				if (!st[k].cancelled) p_get_count(&st[k], t_byte, &count[k]);
			}
			return 0;
		}
	}
	return 0;
}

static int dsgd_mpi_cancel(Request *req) { return p_cancel(req); }
static int dsgd_mpi_request_free(Request *req) { return p_request_free(req); }

static int dsgd_mpi_allreduce(float *buf, int count, Comm c) {
	return p_allreduce(IN_PLACE, buf, count, t_float, op_sum, c);
}

static int dsgd_mpi_bcast(float *buf, int count, int root, Comm c) { return p_bcast(buf, count, t_float, root, c); }

static int dsgd_mpi_reduce(float *buf, int count, int root, int me, Comm c) {
	if (me == root) return p_reduce(IN_PLACE, buf, count, t_float, op_sum, root, c);
	return p_reduce(buf, NULL, count, t_float, op_sum, root, c);
}

static int dsgd_mpi_barrier(Comm c) { return p_barrier(c); }

static void dsgd_mpi_error_string(int code, char *out) {
	int n = 0;
	out[0] = 0;
	if (p_error_string(code, out, &n) != 0) out[0] = 0;
}

static void dsgd_mpi_version(char *out, int *n) { p_get_library_version(out, n); }
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"dsgd/internal/dlopen"
)

// libNames are the sonames tried, in order: Debian's libopenmpi3 (Open MPI
// 3.x and 4.x) provides the first.
var libNames = []string{"libmpi.so.40", "libmpi.so"}

// lib is the process's MPI state: opened and initialised once.
var lib struct {
	once     sync.Once
	err      error
	version  string
	mu       sync.Mutex
	finished bool
	// owner runs Init and Finalize on one locked OS thread, as MPI wants
	// (MPI_Finalize on the thread that initialised).
	owner chan func()
}

// ErrFinalized is returned once Finalize has run: MPI cannot be restarted
// in a process.
var ErrFinalized = errors.New("mpi: MPI was finalized in this process; it cannot be initialised again")

// Init opens Open MPI's library and initialises MPI with
// MPI_THREAD_MULTIPLE (once per process; later calls return the first
// call's result). Errors on the communicators dsgd uses return codes
// instead of aborting the job (MPI_ERRORS_RETURN).
func Init() error {
	lib.once.Do(func() { lib.err = initLib() })
	if lib.err != nil {
		return lib.err
	}
	lib.mu.Lock()
	defer lib.mu.Unlock()
	if lib.finished {
		return ErrFinalized
	}
	return nil
}

func initLib() error {
	// Global: Open MPI's components (plugins it dlopens itself) resolve
	// their symbols against libmpi's.
	h, errs := dlopen.First(libNames, dlopen.Global, func(h unsafe.Pointer) string { return C.GoString(C.dsgd_mpi_bind(h)) })
	if h == nil {
		return fmt.Errorf("mpi: Open MPI could not be loaded (%s); install it with apt-get install openmpi-bin libopenmpi3 and start the ranks with mpirun", strings.Join(errs, "; "))
	}
	// Open MPI's own handlers for SIGSEGV and friends would replace Go's,
	// which turn a nil dereference into a panic: leave them to Go unless
	// the user chose otherwise.
	if _, set := os.LookupEnv("OMPI_MCA_opal_signal"); !set {
		os.Setenv("OMPI_MCA_opal_signal", "")
	}
	lib.owner = make(chan func())
	go func() {
		runtime.LockOSThread() // never unlocked: this thread stays MPI's main thread
		for f := range lib.owner {
			f()
		}
	}()
	var provided, already C.int
	var rc C.int
	onOwner(func() { rc = C.dsgd_mpi_init(&provided, &already) })
	if rc != 0 {
		return fmt.Errorf("mpi: MPI_Init_thread: %s", errorString(rc))
	}
	if already == 0 && provided < C.THREAD_MULTIPLE {
		return fmt.Errorf("mpi: this Open MPI provides thread level %d, not MPI_THREAD_MULTIPLE (3); dsgd sends and receives from several goroutines at once", provided)
	}
	buf := make([]byte, 4096)
	var n C.int
	C.dsgd_mpi_version((*C.char)(unsafe.Pointer(&buf[0])), &n)
	lib.version = strings.TrimSpace(string(buf[:max(0, min(int(n), len(buf)))]))
	if i := strings.IndexByte(lib.version, ','); i > 0 {
		lib.version = lib.version[:i]
	}
	return nil
}

// onOwner runs f on the thread that initialised MPI.
func onOwner(f func()) {
	done := make(chan struct{})
	lib.owner <- func() { f(); close(done) }
	<-done
}

// Version is the MPI library's version line ("Open MPI v4.1.4"), after
// Init.
func Version() string { return lib.version }

// Finalize ends MPI in this process (MPI_Finalize), after the caller has
// closed its endpoints. Under mpirun every rank must call it before it
// exits, or the launcher reports the job as failed. Calling it without
// Init, or twice, does nothing.
func Finalize() error {
	lib.mu.Lock()
	defer lib.mu.Unlock()
	if lib.err != nil || lib.owner == nil || lib.finished {
		return nil
	}
	lib.finished = true
	poll.halt()
	var rc C.int
	onOwner(func() { rc = C.dsgd_mpi_finalize() })
	if rc != 0 {
		return fmt.Errorf("mpi: MPI_Finalize: %s", errorString(rc))
	}
	return nil
}

// worldShape returns this process's rank in MPI_COMM_WORLD and its size.
func worldShape() (rank, size int, err error) {
	var r, s C.int
	if rc := C.dsgd_mpi_world_shape(&r, &s); rc != 0 {
		return 0, 0, fmt.Errorf("mpi: MPI_Comm_rank: %s", errorString(rc))
	}
	return int(r), int(s), nil
}

// errorString is MPI's text for an error code.
func errorString(rc C.int) string {
	buf := make([]byte, C.MAX_ERROR_STRING+1)
	C.dsgd_mpi_error_string(rc, (*C.char)(unsafe.Pointer(&buf[0])))
	s := C.GoString((*C.char)(unsafe.Pointer(&buf[0])))
	if s == "" {
		s = "unknown error"
	}
	return fmt.Sprintf("%s (MPI error %d)", s, int(rc))
}

// comm is a duplicated communicator, private to one group of endpoints.
type comm struct {
	c     C.Comm
	tagUB int
	refs  int
	mu    sync.Mutex
}

// dupComm duplicates MPI_COMM_WORLD (collective: every rank calls it) or
// MPI_COMM_SELF.
func dupComm(self bool) (*comm, error) {
	var c C.Comm
	s := C.int(0)
	if self {
		s = 1
	}
	if rc := C.dsgd_mpi_dup(s, &c); rc != 0 {
		return nil, fmt.Errorf("mpi: MPI_Comm_dup: %s", errorString(rc))
	}
	var ub C.int
	if rc := C.dsgd_mpi_tag_ub(c, &ub); rc != 0 {
		C.dsgd_mpi_free(c)
		return nil, fmt.Errorf("mpi: MPI_TAG_UB: %s", errorString(rc))
	}
	return &comm{c: c, tagUB: int(ub)}, nil
}

// release drops one endpoint's reference; the last frees the communicator
// (MPI defers that until its pending operations complete).
func (c *comm) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refs--
	if c.refs == 0 {
		lib.mu.Lock()
		if !lib.finished {
			C.dsgd_mpi_free(c.c)
		}
		lib.mu.Unlock()
	}
}

// request is one nonblocking operation in flight. After it is started
// only the poller touches its MPI handle; the waiter learns the outcome
// when done closes.
type request struct {
	r   C.Request
	pin runtime.Pinner
	// done closes when the request has completed (or failed); then n,
	// cancelled and rc hold the outcome.
	done      chan struct{}
	n         int
	cancelled bool
	rc        C.int
	// The waiter's wishes, carried out by the poller: cancel the request
	// (Open MPI cancels receives that have not matched, not sends), or
	// abandon it (free it to complete in the background, whenever its
	// receiver takes it; its buffer stays pinned for good).
	wantCancel, wantAbandon atomic.Bool
}

// isend starts sending n elements (floats, or bytes when bytes) at p.
func (c *comm) isend(p unsafe.Pointer, n int, bytes bool, dest, tag int) (*request, C.int) {
	req := &request{done: make(chan struct{})}
	if p != nil {
		req.pin.Pin(p)
	}
	rc := C.dsgd_mpi_isend(p, C.int(n), cbool(bytes), C.int(dest), C.int(tag), c.c, &req.r)
	if rc != 0 {
		req.pin.Unpin()
		return req, rc
	}
	poll.add(req)
	return req, 0
}

// irecv starts receiving up to n elements into p.
func (c *comm) irecv(p unsafe.Pointer, n int, bytes bool, src, tag int) (*request, C.int) {
	req := &request{done: make(chan struct{})}
	if p != nil {
		req.pin.Pin(p)
	}
	rc := C.dsgd_mpi_irecv(p, C.int(n), cbool(bytes), C.int(src), C.int(tag), c.c, &req.r)
	if rc != 0 {
		req.pin.Unpin()
		return req, rc
	}
	poll.add(req)
	return req, 0
}

// cancel asks the poller to cancel the request.
func (r *request) cancel() {
	r.wantCancel.Store(true)
	poll.poke()
}

// abandon asks the poller to let the request complete in the background.
func (r *request) abandon() {
	r.wantAbandon.Store(true)
	poll.poke()
}

// abandoned keeps the requests (and so the pinned buffers) of sends given
// up on: MPI may still read them.
var abandoned struct {
	sync.Mutex
	reqs []*request
}

// poller is the process's one MPI progress loop: it tests every request
// in flight with MPI_Testsome and closes each one's done channel when it
// completes. One spinning thread per process, whatever the number of
// goroutines waiting (they block on their channels), keeps a host with
// more ranks than cores (or ranks under SCHED_FIFO) from filling its
// cores with pollers that keep the threads doing the work off them. It
// spins (yielding the core between tries) while requests are in flight,
// and after yieldFor without a completion sleeps between tries with a
// growing pause, so that a rank waiting for a slower peer's compute does
// not hold a core; with nothing in flight it blocks.
type poller struct {
	mu       sync.Mutex
	incoming []*request
	wake     chan struct{} // a new request, a wish, or stop
	stop     chan struct{}
	stopped  chan struct{}
	started  bool

	// Owned by the loop: the requests in flight and their handles (in C
	// memory, for MPI_Testsome), with its output arrays.
	reqs                        []*request
	handles                     *C.Request
	st                          *C.Status
	idx, count, cancelled, errs *C.int
	capacity                    int
}

var poll = &poller{wake: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{})}

// yieldFor is how long the poller spins without a completion before it
// sleeps between tries: longer than a transfer step between ranks in step,
// shorter than a rank's compute.
const yieldFor = 2 * time.Millisecond

func (p *poller) add(r *request) {
	p.mu.Lock()
	p.incoming = append(p.incoming, r)
	if !p.started {
		p.started = true
		go p.loop()
	}
	p.mu.Unlock()
	p.poke()
}

func (p *poller) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// halt stops the loop (before MPI_Finalize) and waits for it.
func (p *poller) halt() {
	p.mu.Lock()
	started := p.started
	p.mu.Unlock()
	if started {
		close(p.stop)
		<-p.stopped
	}
}

// grow makes room for n handles in C memory.
func (p *poller) grow(n int) {
	if n <= p.capacity {
		return
	}
	c := max(n, 2*p.capacity, 64)
	h := (*C.Request)(C.calloc(C.size_t(c), C.size_t(unsafe.Sizeof(C.Request(nil)))))
	if p.handles != nil {
		C.memcpy(unsafe.Pointer(h), unsafe.Pointer(p.handles), C.size_t(p.capacity)*C.size_t(unsafe.Sizeof(C.Request(nil))))
		C.free(unsafe.Pointer(p.handles))
		C.free(unsafe.Pointer(p.st))
		C.free(unsafe.Pointer(p.idx))
		C.free(unsafe.Pointer(p.count))
		C.free(unsafe.Pointer(p.cancelled))
		C.free(unsafe.Pointer(p.errs))
	}
	p.handles = h
	p.st = (*C.Status)(C.calloc(C.size_t(c), C.size_t(unsafe.Sizeof(C.Status{}))))
	ints := func() *C.int { return (*C.int)(C.calloc(C.size_t(c), C.size_t(unsafe.Sizeof(C.int(0))))) }
	p.idx, p.count, p.cancelled, p.errs = ints(), ints(), ints(), ints()
	p.capacity = c
}

// finish completes request i of the loop's arrays and removes it.
func (p *poller) finish(i int, n int, cancelled bool, rc C.int) {
	r := p.reqs[i]
	r.n, r.cancelled, r.rc = n, cancelled, rc
	r.pin.Unpin()
	p.remove(i)
	close(r.done)
}

// remove drops entry i (the last one takes its place).
func (p *poller) remove(i int) {
	h := unsafe.Slice(p.handles, p.capacity)
	last := len(p.reqs) - 1
	p.reqs[i], h[i] = p.reqs[last], h[last]
	p.reqs[last], h[last] = nil, nil
	p.reqs = p.reqs[:last]
}

func (p *poller) loop() {
	defer close(p.stopped)
	var idle time.Time
	var pause time.Duration
	timer := time.NewTimer(time.Hour)
	for {
		p.mu.Lock()
		if len(p.incoming) > 0 {
			p.grow(len(p.reqs) + len(p.incoming))
			h := unsafe.Slice(p.handles, p.capacity)
			for _, r := range p.incoming {
				h[len(p.reqs)] = r.r
				p.reqs = append(p.reqs, r)
			}
			clear(p.incoming)
			p.incoming = p.incoming[:0]
			idle, pause = time.Time{}, 0
		}
		p.mu.Unlock()
		if len(p.reqs) == 0 {
			select {
			case <-p.wake:
				continue
			case <-p.stop:
				return
			}
		}
		h := unsafe.Slice(p.handles, p.capacity)
		for i := 0; i < len(p.reqs); i++ {
			r := p.reqs[i]
			if r.wantCancel.Swap(false) {
				C.dsgd_mpi_cancel(&h[i])
			}
			if r.wantAbandon.Load() {
				C.dsgd_mpi_request_free(&h[i])
				abandoned.Lock()
				abandoned.reqs = append(abandoned.reqs, r)
				abandoned.Unlock()
				p.remove(i)
				r.rc = -1
				close(r.done)
				i--
			}
		}
		if len(p.reqs) == 0 {
			continue
		}
		var out C.int
		rc := C.dsgd_mpi_poll(p.handles, C.int(len(p.reqs)), 16, 1, p.st, p.idx, p.count, p.cancelled, p.errs, &out)
		switch {
		case rc != 0:
			// The call failed as a whole: every request in it has.
			for len(p.reqs) > 0 {
				p.finish(len(p.reqs)-1, 0, false, rc)
			}
		case out > 0:
			idx := unsafe.Slice(p.idx, out)
			count, can, errs := unsafe.Slice(p.count, out), unsafe.Slice(p.cancelled, out), unsafe.Slice(p.errs, out)
			// Remove from the highest index down, so that the swaps
			// in remove do not move an entry still to be finished.
			order := make([]int, out)
			for k := range order {
				order[k] = k
			}
			slices.SortFunc(order, func(a, b int) int { return int(idx[b]) - int(idx[a]) })
			for _, k := range order {
				p.finish(int(idx[k]), int(count[k]), can[k] != 0, errs[k])
			}
			idle, pause = time.Time{}, 0
			runtime.Gosched() // let a woken waiter have this P
		default:
			if idle.IsZero() {
				idle = time.Now()
			} else if time.Since(idle) > yieldFor {
				pause = min(max(2*pause, 5*time.Microsecond), 500*time.Microsecond)
				timer.Reset(pause)
				select {
				case <-timer.C:
				case <-p.wake:
					timer.Stop()
				case <-p.stop:
					return
				}
			}
		}
		select {
		case <-p.stop:
			return
		default:
		}
	}
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// maxCount is the most elements one MPI message holds (MPI counts are C
// ints).
const maxCount = math.MaxInt32

// native collectives on the whole communicator, in place.

func (c *comm) allreduce(buf []float32) C.int {
	if len(buf) == 0 {
		return 0
	}
	return C.dsgd_mpi_allreduce((*C.float)(unsafe.Pointer(&buf[0])), C.int(len(buf)), c.c)
}

func (c *comm) bcast(buf []float32, root int) C.int {
	if len(buf) == 0 {
		return 0
	}
	return C.dsgd_mpi_bcast((*C.float)(unsafe.Pointer(&buf[0])), C.int(len(buf)), C.int(root), c.c)
}

func (c *comm) reduce(buf []float32, root, me int) C.int {
	if len(buf) == 0 {
		return 0
	}
	return C.dsgd_mpi_reduce((*C.float)(unsafe.Pointer(&buf[0])), C.int(len(buf)), C.int(root), C.int(me), c.c)
}

func (c *comm) barrier() C.int { return C.dsgd_mpi_barrier(c.c) }

// mpiError wraps an MPI error code.
func mpiError(what string, rc C.int) error {
	return fmt.Errorf("%s: %s", what, errorString(rc))
}
