package podmanager

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sort"
	"time"

	"golang.org/x/sys/unix"

	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
)

// stateFormat is the format version written into the state file. Format 1 was a
// snapshot alone; format 2 is a snapshot followed by a journal of changes. Both are read;
// files of other versions are refused.
const stateFormat = 2

// stateDoc is the snapshot that opens the state file.
type stateDoc struct {
	// Format is stateFormat.
	Format int `json:"format"`
	// Pods are the local pods, sorted by namespace and name.
	Pods []podRecord `json:"pods"`
}

// journalEntry is one change appended to the state file after the snapshot: exactly one
// of its fields is set.
type journalEntry struct {
	// Put records a pod (new, or replacing the record of the same pod ID).
	Put *podRecord `json:"put,omitempty"`
	// Delete forgets a pod.
	Delete *podmodel.ID `json:"delete,omitempty"`
}

// podRecord is what the pod manager keeps about a local pod, in memory and in the state
// file.
type podRecord struct {
	Name             string `json:"name"`
	Namespace        string `json:"namespace"`
	ContainerID      string `json:"containerID"`
	NetworkNamespace string `json:"networkNamespace"`
	// NetnsInode identifies the network namespace that NetworkNamespace named when the
	// pod was added (0 when it could not be read). A /proc/<pid>/ns/net path may name
	// another namespace after the PID was reused; the inode tells them apart.
	NetnsInode uint64 `json:"netnsInode,omitempty"`
	// IPAddress is the pod's IP as the CNI reply reported it ("" until the ADD
	// succeeded). After a restart it lets IPAM keep the pod's address even when the
	// Kubernetes state does not show it yet.
	IPAddress string `json:"ipAddress,omitempty"`
	// IPAddresses are the pod's IPs of every family, the primary (IPAddress) first.
	// Records of agents that predate dual-stack have none: their pod has IPAddress
	// only. IPAddress stays written, so an older agent still reads the primary.
	IPAddresses []string `json:"ipAddresses,omitempty"`
	// IfName is the name of the pod's interface inside the pod (CNI_IFNAME). The
	// records of agents that predate it have none: their pods have eth0.
	IfName string `json:"ifName,omitempty"`
	// AddedAt is when this agent recorded the pod's ADD.
	AddedAt time.Time `json:"addedAt,omitzero"`
}

func (r *podRecord) id() podmodel.ID { return podmodel.ID{Name: r.Name, Namespace: r.Namespace} }

// validate reports a record that lacks what recovery needs.
func (r *podRecord) validate() error {
	if r.Name == "" || r.Namespace == "" || r.ContainerID == "" || r.NetworkNamespace == "" {
		return fmt.Errorf("record of %s/%s lacks a name, namespace, container ID or netns", r.Namespace, r.Name)
	}
	if r.IfName != "" {
		if err := ValidateIfName(r.IfName); err != nil {
			return fmt.Errorf("record of %s/%s: %w", r.Namespace, r.Name, err)
		}
	}
	return nil
}

// ifName is the name of the pod's interface: DefaultIfName for the records that have
// none.
func (r *podRecord) ifName() string {
	if r.IfName == "" {
		return DefaultIfName
	}
	return r.IfName
}

// localPod returns the record as the API's LocalPod.
func (r *podRecord) localPod() *LocalPod {
	lp := &LocalPod{ID: r.id(), ContainerID: r.ContainerID, NetworkNamespace: r.NetworkNamespace,
		IPAddress: net.ParseIP(r.IPAddress), IfName: r.ifName()}
	for _, s := range r.ips() {
		if ip := net.ParseIP(s); ip != nil {
			lp.IPAddresses = append(lp.IPAddresses, ip)
		}
	}
	return lp
}

// ips returns the pod's IPs as recorded, the primary first: IPAddresses, or for the
// records of older agents IPAddress alone.
func (r *podRecord) ips() []string {
	if len(r.IPAddresses) > 0 {
		return r.IPAddresses
	}
	if r.IPAddress != "" {
		return []string{r.IPAddress}
	}
	return nil
}

// setIPs records the pod's IPs of every family, the primary first.
func (r *podRecord) setIPs(ips []net.IP) {
	r.IPAddress, r.IPAddresses = "", nil
	for _, ip := range ips {
		if ip == nil {
			continue
		}
		if r.IPAddress == "" {
			r.IPAddress = ip.String()
		}
		r.IPAddresses = append(r.IPAddresses, ip.String())
	}
}

// stateLoad is what readState found in a state file.
type stateLoad struct {
	// Pods are the records after the journal was replayed, sorted by namespace and name.
	Pods []podRecord
	// Entries is how many journal entries were replayed.
	Entries int
	// TornTail describes an unreadable end of the journal ("" when there is none): the
	// entries before it were replayed, the rest was ignored. An append cut short (a full
	// disk, a crash in the middle of a write) leaves such a tail.
	TornTail string
}

// readState reads the state file: the snapshot, then the journal replayed over it. A
// missing file is no pods. An unreadable snapshot, an invalid record or an unknown format
// is an error; an unreadable journal tail is reported in TornTail.
func readState(path string) (*stateLoad, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &stateLoad{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read pod state %s: %w", path, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var doc stateDoc
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("pod state %s: snapshot: %w", path, err)
	}
	if doc.Format != 1 && doc.Format != stateFormat {
		return nil, fmt.Errorf("pod state %s: format %d, this agent reads formats 1 and %d", path, doc.Format, stateFormat)
	}
	pods := make(map[podmodel.ID]*podRecord, len(doc.Pods))
	for i := range doc.Pods {
		r := &doc.Pods[i]
		if err := r.validate(); err != nil {
			return nil, fmt.Errorf("pod state %s: snapshot record %d: %w", path, i, err)
		}
		pods[r.id()] = r
	}
	load := &stateLoad{}
	for {
		offset := dec.InputOffset()
		var e journalEntry
		err := dec.Decode(&e)
		if errors.Is(err, io.EOF) {
			break
		}
		if err == nil {
			err = e.apply(pods)
		}
		if err != nil {
			load.TornTail = fmt.Sprintf("journal entry %d at byte %d: %v", load.Entries+1, offset, err)
			break
		}
		load.Entries++
	}
	load.Pods = sortedRecords(pods)
	return load, nil
}

// apply replays the entry over pods.
func (e *journalEntry) apply(pods map[podmodel.ID]*podRecord) error {
	switch {
	case e.Put != nil && e.Delete == nil:
		if err := e.Put.validate(); err != nil {
			return err
		}
		pods[e.Put.id()] = e.Put
	case e.Delete != nil && e.Put == nil:
		delete(pods, *e.Delete)
	default:
		return errors.New("an entry must hold exactly one of put and delete")
	}
	return nil
}

// sortedRecords returns the records sorted by namespace and name.
func sortedRecords(pods map[podmodel.ID]*podRecord) []podRecord {
	out := make([]podRecord, 0, len(pods))
	for _, r := range pods {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	return out
}

// errCompaction marks a failed compaction: the change itself was persisted.
var errCompaction = errors.New("compact pod state")

// minCompactEntries is the journal length below which the state file is never compacted.
const minCompactEntries = 64

// stateStore keeps the local pods in the state file. A change costs one small append to
// the journal, whatever the number of pods: no rewrite of the whole file and no rename
// on every CNI request (on ext4, renaming a fresh file over an old one flushes the new
// data to disk, which cost milliseconds per ADD). Once the journal outgrows twice the
// pods (and minCompactEntries), the file is compacted: a new snapshot replaces it
// atomically (temporary file + rename). Nothing is fsynced: the file has to survive an
// agent restart or crash, which the page cache does; after a machine crash the pods'
// sandboxes are gone too. Not safe for concurrent use: the plugin's mutex guards it.
type stateStore struct {
	path string
	// journal is the state file opened for appending; nil until the first snapshot, and
	// after a failed append or a close (the next change then writes a snapshot).
	journal *os.File
	// entries counts the journal entries after the snapshot.
	entries int
	// createTemp creates the file of a new snapshot (os.CreateTemp; tests make it fail).
	createTemp func(dir, pattern string) (*os.File, error)
}

// record appends a put of r; when the journal is long or unusable, a snapshot of pods
// (which already holds the change) is written instead.
func (s *stateStore) record(r *podRecord, pods map[podmodel.ID]*podRecord) error {
	return s.change(journalEntry{Put: r}, pods)
}

// forget appends a delete of id; see record.
func (s *stateStore) forget(id podmodel.ID, pods map[podmodel.ID]*podRecord) error {
	return s.change(journalEntry{Delete: &id}, pods)
}

func (s *stateStore) change(e journalEntry, pods map[podmodel.ID]*podRecord) error {
	if s.journal == nil {
		return s.snapshot(pods)
	}
	line, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode pod state change: %w", err)
	}
	if _, err := s.journal.Write(append(line, '\n')); err != nil {
		// The file may now end in a partial line: never append to it again, write a
		// whole snapshot instead (now, or with the next change).
		s.closeJournal()
		if serr := s.snapshot(pods); serr != nil {
			return fmt.Errorf("append to pod state %s: %w; snapshot: %w", s.path, err, serr)
		}
		return nil
	}
	s.entries++
	if s.entries >= max(minCompactEntries, 2*len(pods)) {
		// The change is in the journal already: a failed compaction loses nothing
		// and is tried again with the next change.
		if err := s.snapshot(pods); err != nil {
			return fmt.Errorf("%w: %w", errCompaction, err)
		}
	}
	return nil
}

// snapshot replaces the state file with a snapshot of pods and an empty journal. Until
// the new file is in place the current journal stays open, so a failure changes nothing.
func (s *stateStore) snapshot(pods map[podmodel.ID]*podRecord) error {
	data, err := json.MarshalIndent(stateDoc{Format: stateFormat, Pods: sortedRecords(pods)}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode pod state: %w", err)
	}
	dir := filepath.Dir(s.path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write pod state: %w", err)
	}
	createTemp := s.createTemp
	if createTemp == nil {
		createTemp = os.CreateTemp
	}
	tmp, err := createTemp(dir, "."+filepath.Base(s.path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write pod state: %w", err)
	}
	tmpName := tmp.Name()
	_, err = tmp.Write(append(data, '\n'))
	if err == nil {
		err = os.Rename(tmpName, s.path)
	}
	if err != nil {
		_ = tmp.Close()
		_ = os.Remove(tmpName)
		return fmt.Errorf("write pod state %s: %w", s.path, err)
	}
	// The descriptor now refers to the state file, positioned at its end: it becomes
	// the journal.
	s.closeJournal()
	s.journal, s.entries = tmp, 0
	return nil
}

func (s *stateStore) closeJournal() {
	if s.journal != nil {
		_ = s.journal.Close()
		s.journal = nil
	}
}

// close releases the journal; the file stays as it is. A later change opens it again
// with a snapshot: a CNI request that finishes while the agent stops is still recorded.
func (s *stateStore) close() { s.closeJournal() }

// netnsInode returns the inode of the namespace file at path, 0 when it cannot be read.
func netnsInode(path string) uint64 {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0
	}
	return st.Ino
}

// agentNetnsPath names the network namespace the agent runs in. /proc/self is the
// process's main thread, which never leaves the namespace the agent started in: the
// plugins that enter pod namespaces do so on locked threads of their own.
const agentNetnsPath = "/proc/self/ns/net"

// isAgentNetns reports whether path names the network namespace the agent itself runs
// in: the node's own, as the vswitch pod runs in the host network. A path that cannot be
// examined is not the agent's (the wiring then fails on it with its own error).
func isAgentNetns(path string) bool {
	var pod, own unix.Stat_t
	if unix.Stat(path, &pod) != nil || unix.Stat(agentNetnsPath, &own) != nil {
		return false
	}
	return pod.Dev == own.Dev && pod.Ino == own.Ino
}

// netnsVerdict is what checkNetns found out about a recorded network namespace.
type netnsVerdict int

const (
	// netnsPresent: the path still is the recorded namespace (or nothing says otherwise).
	netnsPresent netnsVerdict = iota
	// netnsGone: the namespace surely does not exist any more.
	netnsGone
	// netnsUnknown: the path could not be examined; the record is kept.
	netnsUnknown
)

// checkNetns examines the network namespace a record names: it is gone when the path no
// longer exists, is no namespace file (a placeholder whose namespace was unmounted) or
// now is another namespace than the one recorded.
func checkNetns(path string, inode uint64) (netnsVerdict, string) {
	var sfs unix.Statfs_t
	if err := unix.Statfs(path, &sfs); err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			return netnsGone, "the path does not exist"
		}
		return netnsUnknown, err.Error()
	}
	if sfs.Type != unix.NSFS_MAGIC {
		return netnsGone, "the path is no namespace file"
	}
	if inode != 0 {
		if got := netnsInode(path); got != 0 && got != inode {
			return netnsGone, fmt.Sprintf("the path names another namespace (inode %d, recorded %d)", got, inode)
		}
	}
	return netnsPresent, ""
}
