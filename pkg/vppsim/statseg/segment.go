package statseg

import (
	"errors"
	"fmt"
	"math/bits"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Layout constants of VPP 25.10's stats segment (vlib/stats/shared.h; spec §4.2).
const (
	// Version is the segment layout version the shared header announces.
	Version = 2
	// MaxNameLen is the longest entry name: the directory keeps char[128] with a NUL.
	MaxNameLen = 127

	hdrVersion    = 0
	hdrBase       = 8
	hdrEpoch      = 16
	hdrInProgress = 24
	hdrDirVector  = 32
	// bytes 40..47 stay zero: govpp reads an old error-vector pointer there and, if it
	// points into the mapping, switches to the legacy type numbering (spec §4.2.2).

	entrySize      = 144 // i32 type, 4 pad, 8-byte union, char[128] name
	entryUnion     = 8
	entryName      = 16
	vecHeaderSize  = 8 // u32 len, u8 hdr_size, u8 align, u8 grow, u8 pad (vppinfra/vec_bootstrap.h)
	heapStart      = 4096
	minBlockLog2   = 4 // 16-byte blocks at least
	defaultSizeMiB = 32
)

// Directory entry types, version 2 numbering (vlib/stats/shared.h stat_directory_type_t).
const (
	typeScalar   = 1
	typeSimple   = 2
	typeCombined = 3
	typeName     = 4
	typeEmpty    = 5
	typeSymlink  = 6
)

// noFree ends the free-slot chain of the directory (CLIB_U32_MAX in stats.c).
const noFree = ^uint32(0)

// ErrFull is returned when the segment has no room left for a vector.
var ErrFull = errors.New("stats segment full")

// ErrClosed is returned by changes to a closed segment.
var ErrClosed = errors.New("stats segment closed")

// Config sizes a segment. The zero value is VPP's default: 32 MiB, one thread (the
// main thread; the simulator has no workers), per-node counters off.
type Config struct {
	// Size is the segment size in bytes (VPP's statseg { size }); 0 means 32 MiB. The
	// memfd is sparse: only touched pages cost memory.
	Size int
	// Threads is the number of per-thread counter vectors (VPP: main + workers); 0
	// means 1.
	Threads int
	// PerNodeCounters publishes /sys/node/* and /nodes/<node>/* (statseg {
	// per-node-counters on }); off by default, as in VPP.
	PerNodeCounters bool
}

// vecRef is the writer's record of one vector in the segment.
type vecRef struct {
	off  uint64 // offset of element 0 (0: no vector)
	n    uint32 // element count, as in the vector header
	cap  uint32 // elements the block holds
	size uint32 // element size in bytes
}

// entry is the writer's record of one directory entry.
type entry struct {
	typ   uint32
	name  string
	outer vecRef   // simple, combined, name: the per-thread (or per-name) pointer vector
	inner []vecRef // simple, combined: one per thread; name: one per element (off 0 = null)
}

// Segment is the writer of one stats segment. Directory changes (entries added or
// removed, vectors grown) take the write lock and follow VPP's protocol (in_progress,
// then epoch+1); counter updates take the read lock and add atomically, so they may
// run from several goroutines and never allocate. Readers in other processes (or
// goroutines) map the memfd that Serve hands out.
type Segment struct {
	mu      sync.RWMutex
	mem     []byte
	file    *os.File
	base    uint64
	threads int
	heap    allocator
	closed  bool

	dir      vecRef // the directory vector
	entries  []entry
	byName   map[string]uint32
	freeHead uint32

	vpp // the VPP-shaped entries (vpp.go)
}

// New creates the segment: a memfd of cfg.Size bytes mapped shared, the header
// (version 2, epoch 1) and VPP's fixed entries.
func New(cfg Config) (*Segment, error) {
	size := cfg.Size
	if size == 0 {
		size = defaultSizeMiB << 20
	}
	if size < 2*heapStart || size%os.Getpagesize() != 0 {
		return nil, fmt.Errorf("statseg: size %d: must be a multiple of the page size and at least %d", size, 2*heapStart)
	}
	threads := cfg.Threads
	if threads == 0 {
		threads = 1
	}
	if threads < 0 || threads > 1024 {
		return nil, fmt.Errorf("statseg: threads %d: must be 1..1024", threads)
	}
	fd, err := unix.MemfdCreate("stat segment", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("statseg: memfd_create: %w", err)
	}
	file := os.NewFile(uintptr(fd), "stat segment")
	if err := file.Truncate(int64(size)); err != nil {
		file.Close()
		return nil, fmt.Errorf("statseg: size the memfd to %d bytes: %w", size, err)
	}
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		file.Close()
		return nil, fmt.Errorf("statseg: map %d bytes: %w", size, err)
	}
	s := &Segment{
		mem:      mem,
		file:     file,
		base:     uint64(uintptr(unsafe.Pointer(&mem[0]))), // VPP stores its own mapping address
		threads:  threads,
		heap:     allocator{next: heapStart, end: uint64(size)},
		byName:   make(map[string]uint32),
		freeHead: noFree,
		dir:      vecRef{size: entrySize}, // allocated by the first entry
	}
	s.store(hdrVersion, Version)
	s.store(hdrBase, s.base)
	s.store(hdrEpoch, 1) // stats init.c: the epoch starts at 1 (govpp takes 0 as a failure)
	if err := s.initVPP(cfg); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Close unmaps the segment and closes the memfd; readers keep their own mappings.
func (s *Segment) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	err := unix.Munmap(s.mem)
	s.mem = nil
	return errors.Join(err, s.file.Close())
}

// Epoch returns the directory epoch readers compare.
func (s *Segment) Epoch() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return 0
	}
	return s.load(hdrEpoch)
}

// Threads is the number of per-thread counter vectors.
func (s *Segment) Threads() int { return s.threads }

func (s *Segment) word(off uint64) *uint64 { return (*uint64)(unsafe.Pointer(&s.mem[off])) }
func (s *Segment) store(off, v uint64)     { atomic.StoreUint64(s.word(off), v) }
func (s *Segment) load(off uint64) uint64  { return atomic.LoadUint64(s.word(off)) }
func (s *Segment) ptr(off uint64) uint64 {
	if off == 0 {
		return 0
	}
	return s.base + off
}

// refusedError is an error found before a change touched anything readers see.
type refusedError struct{ error }

func (e refusedError) Unwrap() error { return e.error }

// refused marks err as found before any change.
func refused(err error) error { return refusedError{err} }

// change runs f as one directory change under the write lock: in_progress=1, f,
// epoch+1, in_progress=0 (vlib_stats_segment_lock/unlock). The epoch moves even when
// f fails half way, so readers re-read whatever it left; it stays when f refused
// before changing anything (a duplicate name: VPP checks it before locking).
func (s *Segment) change(f func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.store(hdrInProgress, 1)
	err := f()
	if !errors.As(err, new(refusedError)) {
		s.store(hdrEpoch, s.load(hdrEpoch)+1)
	}
	s.store(hdrInProgress, 0)
	return err
}

// allocator hands out power-of-two blocks of the segment heap. It takes fresh memory
// first and reuses freed blocks (oldest first) only once the heap is exhausted: a
// reader that raced a directory change and still follows an old pointer then reads
// stale but well-formed data until the epoch check sends it back (VPP frees at once;
// a delayed reuse keeps a slow reader from following garbage lengths).
type allocator struct {
	next, end uint64
	free      [64][]uint64
}

func blockLog2(n uint64) int {
	if n <= 1<<minBlockLog2 {
		return minBlockLog2
	}
	return bits.Len64(n - 1)
}

func (a *allocator) alloc(n uint64) (uint64, error) {
	k := blockLog2(n)
	size := uint64(1) << k
	if a.next+size <= a.end {
		off := a.next
		a.next += size
		return off, nil
	}
	if q := a.free[k]; len(q) > 0 {
		off := q[0]
		a.free[k] = q[1:]
		return off, nil
	}
	return 0, fmt.Errorf("%w: no block of %d bytes left", ErrFull, size)
}

func (a *allocator) release(off, n uint64) {
	k := blockLog2(n)
	a.free[k] = append(a.free[k], off)
}

// newVec allocates a vector of n elements of the given size (capacity at least
// capHint), zeroed, with its header written; it returns the record of element 0.
func (s *Segment) newVec(n, capHint, size uint32) (vecRef, error) {
	c := max(n, capHint, 1)
	blk := uint64(vecHeaderSize) + uint64(c)*uint64(size)
	off, err := s.heap.alloc(blk)
	if err != nil {
		return vecRef{}, err
	}
	full := uint64(1) << blockLog2(blk)
	clear(s.mem[off : off+full])
	v := vecRef{off: off + vecHeaderSize, n: n, cap: uint32((full - vecHeaderSize) / uint64(size)), size: size}
	s.setLen(&v, n)
	return v, nil
}

func (s *Segment) freeVec(v vecRef) {
	if v.off == 0 {
		return
	}
	s.heap.release(v.off-vecHeaderSize, uint64(vecHeaderSize)+uint64(v.cap)*uint64(v.size))
}

// setLen writes the u32 length of the vector header (the rest of the header word,
// hdr_size, align and grow, stays 0).
func (s *Segment) setLen(v *vecRef, n uint32) {
	v.n = n
	s.store(v.off-vecHeaderSize, uint64(n))
}

// grow makes v hold at least n elements, new ones zero. Within the capacity only the
// header changes; beyond it the vector moves (doubling) and moved reports it.
func (s *Segment) grow(v *vecRef, n uint32) (moved bool, err error) {
	if n <= v.n {
		return false, nil
	}
	if n <= v.cap {
		// Elements past the old length may hold values of a shrink; VPP zeroes what
		// vec_validate adds.
		clear(s.mem[v.off+uint64(v.n)*uint64(v.size) : v.off+uint64(n)*uint64(v.size)])
		s.setLen(v, n)
		return false, nil
	}
	nv, err := s.newVec(n, 2*v.cap, v.size)
	if err != nil {
		return false, err
	}
	copy(s.mem[nv.off:], s.mem[v.off:v.off+uint64(v.n)*uint64(v.size)])
	s.freeVec(*v)
	*v = nv
	return true, nil
}

// entryOff is the offset of directory entry i.
func (s *Segment) entryOff(i uint32) uint64 { return s.dir.off + uint64(i)*entrySize }

// addEntry creates a directory entry (reusing the last freed slot first, as
// vlib_stats_create_counter does) and returns its index. Caller holds the change.
func (s *Segment) addEntry(typ uint32, name string, union uint64) (uint32, error) {
	if err := checkName(name); err != nil {
		return 0, refused(err)
	}
	if _, dup := s.byName[name]; dup {
		return 0, refused(fmt.Errorf("statseg: entry name %q: already registered", name))
	}
	var i uint32
	if s.freeHead != noFree {
		i = s.freeHead
		s.freeHead = uint32(s.load(s.entryOff(i) + entryUnion))
		s.entries[i] = entry{}
	} else {
		i = uint32(len(s.entries))
		moved, err := s.grow(&s.dir, i+1)
		if err != nil {
			return 0, fmt.Errorf("statseg: grow the directory for %q: %w", name, err)
		}
		if moved || s.load(hdrDirVector) == 0 {
			s.store(hdrDirVector, s.ptr(s.dir.off))
		}
		s.entries = append(s.entries, entry{})
	}
	off := s.entryOff(i)
	clear(s.mem[off+entryName : off+entrySize])
	copy(s.mem[off+entryName:], name)
	s.store(off+entryUnion, union)
	s.store(off, uint64(typ)) // i32 type and its 4 padding bytes
	s.entries[i] = entry{typ: typ, name: name}
	s.byName[name] = i
	return i, nil
}

// checkName refuses an entry name that does not fit the directory's char[128] (VPP
// asserts it in debug builds and truncates in release ones, stats.c
// vlib_stats_set_entry_name; a truncated name could collide, so it is refused).
func checkName(name string) error {
	if name == "" || len(name) > MaxNameLen {
		return fmt.Errorf("statseg: entry name %q: must be 1..%d bytes, has %d", name, MaxNameLen, len(name))
	}
	return nil
}

// removeEntry frees the entry's vectors and puts its slot at the head of the free
// chain: type EMPTY, name cleared, union = the next free slot (vlib_stats_remove_entry).
func (s *Segment) removeEntry(i uint32) {
	e := &s.entries[i]
	for _, v := range e.inner {
		s.freeVec(v)
	}
	s.freeVec(e.outer)
	delete(s.byName, e.name)
	off := s.entryOff(i)
	s.store(off, typeEmpty)
	clear(s.mem[off+entryName : off+entrySize])
	s.store(off+entryUnion, uint64(s.freeHead))
	s.freeHead = i
	*e = entry{typ: typeEmpty}
}

// addCounter creates a simple (8-byte) or combined (16-byte) counter entry with one
// vector of n elements per thread.
func (s *Segment) addCounter(typ uint32, name string, n uint32) (uint32, error) {
	size := uint32(8)
	if typ == typeCombined {
		size = 16
	}
	outer, err := s.newVec(uint32(s.threads), 0, 8)
	if err != nil {
		return 0, fmt.Errorf("statseg: %s: %w", name, err)
	}
	inner := make([]vecRef, s.threads)
	for t := range inner {
		if inner[t], err = s.newVec(n, 0, size); err != nil {
			for _, v := range inner[:t] {
				s.freeVec(v)
			}
			s.freeVec(outer)
			return 0, fmt.Errorf("statseg: %s: %w", name, err)
		}
		s.store(outer.off+uint64(t)*8, s.ptr(inner[t].off))
	}
	i, err := s.addEntry(typ, name, s.ptr(outer.off))
	if err != nil {
		for _, v := range inner {
			s.freeVec(v)
		}
		s.freeVec(outer)
		return 0, err
	}
	s.entries[i].outer, s.entries[i].inner = outer, inner
	return i, nil
}

// growCounter makes every thread's vector of entry i hold n elements.
func (s *Segment) growCounter(i uint32, n uint32) error {
	e := &s.entries[i]
	for t := range e.inner {
		moved, err := s.grow(&e.inner[t], n)
		if err != nil {
			return fmt.Errorf("statseg: grow %s to %d elements: %w", e.name, n, err)
		}
		if moved {
			s.store(e.outer.off+uint64(t)*8, s.ptr(e.inner[t].off))
		}
	}
	return nil
}

// resetCounter sets every thread's vector of entry i to n zero elements.
func (s *Segment) resetCounter(i uint32, n uint32) error {
	e := &s.entries[i]
	for t := range e.inner {
		v := &e.inner[t]
		clear(s.mem[v.off : v.off+uint64(v.n)*uint64(v.size)])
		if n < v.n {
			s.setLen(v, n)
		}
	}
	return s.growCounter(i, n)
}

// addNameVector creates an empty name vector entry.
func (s *Segment) addNameVector(name string) (uint32, error) {
	outer, err := s.newVec(0, 8, 8)
	if err != nil {
		return 0, fmt.Errorf("statseg: %s: %w", name, err)
	}
	i, err := s.addEntry(typeName, name, s.ptr(outer.off))
	if err != nil {
		s.freeVec(outer)
		return 0, err
	}
	s.entries[i].outer = outer
	return i, nil
}

// setName sets element k of name vector i (growing it, null elements between), as
// vlib_stats_set_string_vector: a NUL-terminated byte vector whose length counts the NUL.
func (s *Segment) setName(i, k uint32, value string) error {
	e := &s.entries[i]
	if k >= e.outer.n {
		moved, err := s.grow(&e.outer, k+1)
		if err != nil {
			return fmt.Errorf("statseg: grow %s to %d names: %w", e.name, k+1, err)
		}
		if moved {
			s.store(s.entryOff(i)+entryUnion, s.ptr(e.outer.off))
		}
		e.inner = append(e.inner, make([]vecRef, int(k+1)-len(e.inner))...)
	}
	str, err := s.newVec(uint32(len(value))+1, 0, 1)
	if err != nil {
		return fmt.Errorf("statseg: %s[%d] = %q: %w", e.name, k, value, err)
	}
	copy(s.mem[str.off:], value)
	s.store(e.outer.off+uint64(k)*8, s.ptr(str.off))
	s.freeVec(e.inner[k])
	e.inner[k] = str
	return nil
}

// addSymlink creates an entry that names element elem of entry target.
func (s *Segment) addSymlink(name string, target, elem uint32) (uint32, error) {
	return s.addEntry(typeSymlink, name, uint64(target)|uint64(elem)<<32)
}

// setScalar stores v in the union of scalar entry i.
func (s *Segment) setScalar(i uint32, v uint64) { s.store(s.entryOff(i)+entryUnion, v) }

// addSimple adds n to element k of thread t's vector of simple counter i; an index
// past the vector (never validated) or a thread out of range is ignored. Caller
// holds the read lock.
func (s *Segment) addSimple(i uint32, t int, k uint32, n uint64) {
	e := &s.entries[i]
	if t < 0 || t >= len(e.inner) || k >= e.inner[t].n {
		return
	}
	atomic.AddUint64(s.word(e.inner[t].off+uint64(k)*8), n)
}

// setSimple stores v in element k of thread t's vector of simple counter i.
func (s *Segment) setSimple(i uint32, t int, k uint32, v uint64) {
	e := &s.entries[i]
	if t < 0 || t >= len(e.inner) || k >= e.inner[t].n {
		return
	}
	atomic.StoreUint64(s.word(e.inner[t].off+uint64(k)*8), v)
}

// zeroCombined zeroes element k of thread t of combined counter i.
func (s *Segment) zeroCombined(i uint32, t int, k uint32) {
	e := &s.entries[i]
	if t < 0 || t >= len(e.inner) || k >= e.inner[t].n {
		return
	}
	off := e.inner[t].off + uint64(k)*16
	atomic.StoreUint64(s.word(off), 0)
	atomic.StoreUint64(s.word(off+8), 0)
}

// addCombined adds packets and bytes to element k of thread t of combined counter i.
func (s *Segment) addCombined(i uint32, t int, k uint32, packets, bytes uint64) {
	e := &s.entries[i]
	if t < 0 || t >= len(e.inner) || k >= e.inner[t].n {
		return
	}
	off := e.inner[t].off + uint64(k)*16
	atomic.AddUint64(s.word(off), packets)
	atomic.AddUint64(s.word(off+8), bytes)
}
