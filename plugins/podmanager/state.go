package podmanager

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sort"

	"golang.org/x/sys/unix"

	podmodel "github.com/contiv-vpp/contiv-vpp/plugins/ksr/model/pod"
)

// stateFormat is the format version written into the state file; files of other versions
// are ignored.
const stateFormat = 1

// stateDoc is the content of the state file.
type stateDoc struct {
	// Format is stateFormat.
	Format int `json:"format"`
	// Pods are the local pods, sorted by namespace and name.
	Pods []podRecord `json:"pods"`
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
}

func (r *podRecord) id() podmodel.ID { return podmodel.ID{Name: r.Name, Namespace: r.Namespace} }

// localPod returns the record as the API's LocalPod.
func (r *podRecord) localPod() *LocalPod {
	return &LocalPod{ID: r.id(), ContainerID: r.ContainerID, NetworkNamespace: r.NetworkNamespace,
		IPAddress: net.ParseIP(r.IPAddress)}
}

// readState reads the state file; a missing file is no pods.
func readState(path string) ([]podRecord, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read pod state %s: %w", path, err)
	}
	var doc stateDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("pod state %s: %w", path, err)
	}
	if doc.Format != stateFormat {
		return nil, fmt.Errorf("pod state %s: format %d, this agent reads format %d", path, doc.Format, stateFormat)
	}
	for i, r := range doc.Pods {
		if r.Name == "" || r.Namespace == "" || r.ContainerID == "" || r.NetworkNamespace == "" {
			return nil, fmt.Errorf("pod state %s: record %d (%s/%s) lacks a name, namespace, container ID or netns",
				path, i, r.Namespace, r.Name)
		}
	}
	return doc.Pods, nil
}

// writeState replaces the state file atomically (write a temporary file, rename it over
// the old one): a reader (the next agent) sees either the old or the new content, never a
// partial one.
func writeState(path string, pods map[podmodel.ID]*podRecord) error {
	doc := stateDoc{Format: stateFormat, Pods: make([]podRecord, 0, len(pods))}
	for _, r := range pods {
		doc.Pods = append(doc.Pods, *r)
	}
	sort.Slice(doc.Pods, func(i, j int) bool {
		a, b := doc.Pods[i], doc.Pods[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fmt.Errorf("encode pod state: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write pod state: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write pod state: %w", err)
	}
	tmpName := tmp.Name()
	// No fsync: the file has to survive an agent crash or restart, which the page cache
	// does; after a machine crash the pods' sandboxes are gone too. Skipping it saves a
	// disk flush on every CNI ADD and DEL (about a millisecond on a plain disk).
	_, err = tmp.Write(append(data, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmpName, path)
	}
	if err != nil {
		_ = os.Remove(tmpName)
		return fmt.Errorf("write pod state %s: %w", path, err)
	}
	return nil
}

// netnsInode returns the inode of the namespace file at path, 0 when it cannot be read.
func netnsInode(path string) uint64 {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0
	}
	return st.Ino
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
