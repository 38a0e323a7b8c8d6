package dbwatcher

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
	"golang.org/x/sys/unix"
)

// errCorrupt is wrapped by the errors of a bolt file that cannot be used as it is
// (damaged metadata or pages, cut short, not a bolt file at all).
var errCorrupt = errors.New("bolt file corrupt")

// errLocked is wrapped by the error of a bolt file whose lock another process held
// for longer than the lock timeout.
var errLocked = errors.New("locked by another process")

// The parts of bolt's file format (version 2) that checkBoltMeta reads: each of the
// two first pages holds, after a 16-byte page header, a meta record whose last field
// is an FNV-64a checksum of the fields before it.
const (
	boltMagic       = 0xED0CDAED
	boltVersion     = 2
	boltPageHeader  = 16
	boltMetaSize    = 64 // magic, version, page size, flags, root (2x8), freelist, pgid, txid, checksum
	boltChecksumOff = 56
	boltPgidOff     = 40 // high-water mark: pages [0, pgid) are in use
	boltTxidOff     = 48
	boltMinPageSize = 1024
	boltMaxPageSize = 1 << 16
)

// checkBoltMeta reads the meta records of the bolt file at path with plain reads (no
// mapping) and checks that the file holds every page the newest valid one counts: a
// file cut short makes bolt fault (SIGBUS) on the missing pages, which
// openBoltGuarded turns into an error that says little; this one says what is wrong.
// A file without a valid meta record passes (bolt refuses it with an error of its own).
func checkBoltMeta(path string) error {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() == 0 {
		return nil // bolt initialises an empty file
	}
	var best struct {
		ok         bool
		txid, pgid uint64
		pageSize   int64
	}
	pageSize := int64(0)
	for slot := int64(0); slot < 2; slot++ {
		off := slot * pageSize // the second meta is one page after the first
		buf := make([]byte, boltPageHeader+boltMetaSize)
		if _, err := f.ReadAt(buf, off); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return err
		}
		m := buf[boltPageHeader:]
		le := binary.LittleEndian
		ps := int64(le.Uint32(m[8:]))
		valid := le.Uint32(m[0:]) == boltMagic && le.Uint32(m[4:]) == boltVersion &&
			ps >= boltMinPageSize && ps <= boltMaxPageSize && ps&(ps-1) == 0
		if valid {
			h := fnv.New64a()
			_, _ = h.Write(m[:boltChecksumOff])
			valid = h.Sum64() == le.Uint64(m[boltChecksumOff:])
		}
		if slot == 0 {
			pageSize = ps
			if !valid {
				pageSize = int64(os.Getpagesize()) // where bolt looks for the second meta then
			}
		}
		if !valid {
			continue
		}
		if txid := le.Uint64(m[boltTxidOff:]); !best.ok || txid > best.txid {
			best.ok, best.txid, best.pgid, best.pageSize = true, txid, le.Uint64(m[boltPgidOff:]), ps
		}
	}
	if !best.ok {
		return nil
	}
	if need := int64(best.pgid) * best.pageSize; best.pgid > 0 && st.Size() < need {
		return fmt.Errorf("%w: %d bytes, but its metadata counts %d pages of %d bytes (%d bytes): the file was cut short",
			errCorrupt, st.Size(), best.pgid, best.pageSize, need)
	}
	return nil
}

// openBoltGuarded opens the bolt file and reads every key and value of every bucket
// once, turning a panic of bolt (its assertions on damaged pages) and a fault on the
// mapped file into an error wrapping errCorrupt. A panic inside bolt's Open leaves
// its file descriptor and mapping behind (bolt returns no handle to close); the
// caller then sets the file aside, so they only cost a descriptor until the agent
// stops.
func openBoltGuarded(path string, mode os.FileMode, opts *bolt.Options) (db *bolt.DB, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if db != nil {
				_ = closeQuietly(db)
			}
			db = nil
			err = fmt.Errorf("%w: bolt failed on it: %v", errCorrupt, r)
		}
	}()
	db, err = bolt.Open(path, mode, opts)
	if err != nil {
		return nil, classifyOpenError(err)
	}
	if err := readEverything(db); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("%w: %w", errCorrupt, err)
	}
	return db, nil
}

// closeQuietly closes a bolt DB that failed, ignoring a panic of its own.
func closeQuietly(db *bolt.DB) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("close: %v", r)
		}
	}()
	return db.Close()
}

// classifyOpenError tells a damaged file (wrapped in errCorrupt) from a lock held by
// another process (errLocked) and from a failure of the system (permissions, a
// missing directory, no memory), returned as it is: only a damaged file may be set
// aside.
func classifyOpenError(err error) error {
	var errno syscall.Errno
	switch {
	case errors.Is(err, bolterrors.ErrTimeout):
		return fmt.Errorf("%w: %w", errLocked, err)
	case errors.Is(err, bolterrors.ErrInvalid), errors.Is(err, bolterrors.ErrVersionMismatch), errors.Is(err, bolterrors.ErrChecksum):
		return fmt.Errorf("%w: %w", errCorrupt, err)
	case errors.As(err, &errno), errors.Is(err, os.ErrPermission), errors.Is(err, os.ErrNotExist):
		return err
	}
	// bolt's other refusals are plain errors about the content ("file size too small",
	// a page size it cannot map).
	return fmt.Errorf("%w: %w", errCorrupt, err)
}

// readEverything reads every byte of every key and value of every bucket (nested ones
// included), so damaged pages show up now and not later in the middle of a resync.
func readEverything(db *bolt.DB) error {
	return db.View(func(tx *bolt.Tx) error {
		var sum uint32
		var walk func(b *bolt.Bucket) error
		walk = func(b *bolt.Bucket) error {
			return b.ForEach(func(k, v []byte) error {
				sum = crc32.Update(sum, crc32.IEEETable, k)
				if v == nil {
					if nested := b.Bucket(k); nested != nil {
						return walk(nested)
					}
					return nil
				}
				sum = crc32.Update(sum, crc32.IEEETable, v)
				return nil
			})
		}
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			if err := walk(b); err != nil {
				return fmt.Errorf("bucket %s: %w", name, err)
			}
			return nil
		})
	})
}

// lockHolder names the processes holding a lock on the file at path, from
// /proc/locks: "pid 1234 (contiv-agent)". It returns "" when that is not knowable (no
// /proc, the holder in another PID namespace).
func lockHolder(path string) string {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return ""
	}
	f, err := os.Open("/proc/locks")
	if err != nil {
		return ""
	}
	defer f.Close()
	// A line: "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"; waiters have "->"
	// after the number. The device is major:minor in hex, then the inode.
	want := fmt.Sprintf("%02x:%02x:%d", unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)), st.Ino)
	var holders []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] == "->" || fields[5] != want {
			continue
		}
		pid, err := strconv.Atoi(fields[4])
		if err != nil || pid <= 0 {
			continue
		}
		h := "pid " + fields[4]
		if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil {
			h += " (" + strings.TrimSpace(string(comm)) + ")"
		}
		holders = append(holders, h)
	}
	return strings.Join(holders, ", ")
}
