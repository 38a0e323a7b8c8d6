package podmanager

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
)

// describeRecords renders records as "ns/name container netns ip" lines joined by "; ".
func describeRecords(recs []podRecord) string {
	var s []string
	for _, r := range recs {
		s = append(s, strings.TrimSpace(fmt.Sprintf("%s %s %s %s", r.id(), r.ContainerID, r.NetworkNamespace, r.IPAddress)))
	}
	return strings.Join(s, "; ")
}

func TestReadState(t *testing.T) {
	const snap2 = `{"format": 2, "pods": [{"name": "web", "namespace": "default", "containerID": "c1", "networkNamespace": "/ns/web"}]}` + "\n"
	tests := []struct {
		name     string
		content  string // "" = no file
		want     string
		entries  int
		tornTail string // substring of TornTail; "" = none
		err      string // substring of the error; "" = none
	}{
		{name: "no file"},
		{name: "format 1 (snapshot only, indented)",
			content: "{\n  \"format\": 1,\n  \"pods\": [\n    {\"name\": \"db\", \"namespace\": \"prod\", \"containerID\": \"c9\", \"networkNamespace\": \"/ns/db\", \"ipAddress\": \"10.1.1.9\"}\n  ]\n}\n",
			want:    "prod/db c9 /ns/db 10.1.1.9"},
		{name: "snapshot without journal", content: snap2, want: "default/web c1 /ns/web"},
		{name: "journal replayed in order",
			content: snap2 +
				`{"put":{"name":"db","namespace":"default","containerID":"c2","networkNamespace":"/ns/db"}}` + "\n" +
				`{"put":{"name":"web","namespace":"default","containerID":"c3","networkNamespace":"/ns/web2","ipAddress":"10.1.1.3"}}` + "\n" +
				`{"delete":{"name":"db","namespace":"default"}}` + "\n" +
				`{"delete":{"name":"never-there","namespace":"default"}}` + "\n" +
				`{"put":{"name":"api","namespace":"apps","containerID":"c4","networkNamespace":"/ns/api"}}` + "\n",
			want:    "apps/api c4 /ns/api; default/web c3 /ns/web2 10.1.1.3",
			entries: 5},
		{name: "torn tail: a cut-off append",
			content: snap2 +
				`{"put":{"name":"db","namespace":"default","containerID":"c2","networkNamespace":"/ns/db"}}` + "\n" +
				`{"put":{"name":"api","namesp`,
			want: "default/db c2 /ns/db; default/web c1 /ns/web", entries: 1,
			tornTail: "journal entry 2 at byte"},
		{name: "torn tail: an entry with both operations",
			content: snap2 + `{"put":{"name":"db","namespace":"default","containerID":"c2","networkNamespace":"/ns/db"},"delete":{"name":"web","namespace":"default"}}` + "\n",
			want:    "default/web c1 /ns/web", tornTail: "exactly one of put and delete"},
		{name: "torn tail: an incomplete record",
			content: snap2 + `{"put":{"name":"db","namespace":"default"}}` + "\n",
			want:    "default/web c1 /ns/web", tornTail: "lacks a name, namespace, container ID or netns"},
		{name: "garbage", content: "{not json", err: "snapshot"},
		{name: "unknown format", content: `{"format": 99, "pods": []}`, err: "format 99, this agent reads formats 1 and 2"},
		{name: "incomplete snapshot record", content: `{"format": 2, "pods": [{"name": "web", "namespace": "default"}]}`,
			err: "snapshot record 0: record of default/web lacks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "pods.json")
			if tt.content != "" {
				if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			load, err := readState(path)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error = %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := describeRecords(load.Pods); got != tt.want {
				t.Errorf("pods = %q, want %q", got, tt.want)
			}
			if load.Entries != tt.entries {
				t.Errorf("entries = %d, want %d", load.Entries, tt.entries)
			}
			if (tt.tornTail == "") != (load.TornTail == "") || !strings.Contains(load.TornTail, tt.tornTail) {
				t.Errorf("torn tail = %q, want %q", load.TornTail, tt.tornTail)
			}
		})
	}
}

// TestStateStoreFollowsChanges applies random puts and deletes and reads the file back
// after each: it always holds exactly the pods in memory, and compaction keeps the
// journal (and the file) bounded by the number of pods.
func TestStateStoreFollowsChanges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "pods.json")
	st := &stateStore{path: path}
	defer st.close()
	pods := make(map[podmodel.ID]*podRecord)
	rng := rand.New(rand.NewPCG(1, 2))
	compactions, maxSize := 0, int64(0)
	for step := range 1000 {
		id := podmodel.ID{Name: fmt.Sprintf("pod-%d", rng.IntN(12)), Namespace: "default"}
		var err error
		before := st.entries
		if rng.IntN(3) == 0 {
			delete(pods, id)
			err = st.forget(id, pods)
		} else {
			r := &podRecord{Name: id.Name, Namespace: id.Namespace, ContainerID: fmt.Sprintf("c%d", step),
				NetworkNamespace: "/ns/" + id.Name, IPAddress: fmt.Sprintf("10.1.1.%d", step%250+2)}
			pods[id] = r
			err = st.record(r, pods)
		}
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if st.entries <= before {
			compactions++
		}
		load, err := readState(path)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if got, want := describeRecords(load.Pods), describeRecords(sortedRecords(pods)); got != want || load.TornTail != "" {
			t.Fatalf("step %d: file holds %q (torn tail %q), memory %q", step, got, load.TornTail, want)
		}
		if load.Entries != st.entries {
			t.Fatalf("step %d: file has %d journal entries, the store counts %d", step, load.Entries, st.entries)
		}
		if fi, err := os.Stat(path); err == nil {
			maxSize = max(maxSize, fi.Size())
		}
	}
	// 12 pods at most: compaction at 64 entries, about 15 times in 1000 changes.
	if compactions < 10 || compactions > 30 {
		t.Errorf("%d compactions in 1000 changes, want about 15", compactions)
	}
	if maxSize > 16<<10 {
		t.Errorf("the state file grew to %d bytes for at most 12 pods", maxSize)
	}
}

// TestStateStoreRecoversFromAFailedAppend: when an append fails, the change is written
// with a whole snapshot at once, so a partial line cannot hide it or later changes.
func TestStateStoreRecoversFromAFailedAppend(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pods.json")
	st := &stateStore{path: path}
	defer st.close()
	pods := map[podmodel.ID]*podRecord{}
	web := &podRecord{Name: "web", Namespace: "default", ContainerID: "c1", NetworkNamespace: "/ns/web"}
	pods[web.id()] = web
	if err := st.record(web, pods); err != nil { // the first change writes a snapshot
		t.Fatal(err)
	}
	// Break the journal's descriptor behind the store's back, and leave a partial line.
	_ = st.journal.Close()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(`{"put":{"na`)
	_ = f.Close()
	db := &podRecord{Name: "db", Namespace: "default", ContainerID: "c2", NetworkNamespace: "/ns/db"}
	pods[db.id()] = db
	if err := st.record(db, pods); err != nil {
		t.Fatalf("a failed append followed by a good snapshot: %v", err)
	}
	load, err := readState(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := describeRecords(load.Pods); got != "default/db c2 /ns/db; default/web c1 /ns/web" || load.TornTail != "" || load.Entries != 0 {
		t.Errorf("after the failed append the file holds %q (%d entries, torn tail %q)", got, load.Entries, load.TornTail)
	}
}

// TestStateStoreKeepsChangesWhenCompactionFails: a change is appended before the
// compaction it triggers; if the compaction fails (a full tmpfs), the change is in the
// journal all the same, and so are the following ones until a compaction succeeds.
func TestStateStoreKeepsChangesWhenCompactionFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pods.json")
	st := &stateStore{path: path}
	defer st.close()
	pods := map[podmodel.ID]*podRecord{}
	put := func(i int) error {
		r := &podRecord{Name: fmt.Sprintf("p%d", i%3), Namespace: "default", ContainerID: fmt.Sprintf("c%d", i), NetworkNamespace: "/ns"}
		pods[r.id()] = r
		return st.record(r, pods)
	}
	if err := put(0); err != nil {
		t.Fatal(err)
	}
	full := errors.New("no space left on device")
	st.createTemp = func(string, string) (*os.File, error) { return nil, full }
	failed := 0
	for i := 1; i <= minCompactEntries+5; i++ {
		if err := put(i); err != nil {
			if !errors.Is(err, full) || !strings.Contains(err.Error(), "compact pod state") {
				t.Fatalf("change %d: %v", i, err)
			}
			failed++
		}
		load, err := readState(path)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := describeRecords(load.Pods), describeRecords(sortedRecords(pods)); got != want {
			t.Fatalf("change %d: file holds %q, memory %q", i, got, want)
		}
	}
	if failed != 6 {
		t.Errorf("%d compactions failed, want the 6 tried from entry %d on", failed, minCompactEntries)
	}
	st.createTemp = nil
	if err := put(100); err != nil {
		t.Fatal(err)
	}
	if load, err := readState(path); err != nil || load.Entries != 0 || describeRecords(load.Pods) != describeRecords(sortedRecords(pods)) {
		t.Errorf("after a successful compaction: %+v, %v", load, err)
	}
}

func TestRecoveryReplaysTheJournalAndCompacts(t *testing.T) {
	dir := shortTempDir(t)
	path := stateFileIn(dir)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	content := `{"format": 2, "pods": [{"name": "web", "namespace": "default", "containerID": "c1", "networkNamespace": "/ns/web"}]}` + "\n" +
		`{"put":{"name":"db","namespace":"default","containerID":"c2","networkNamespace":"/ns/db","ipAddress":"10.1.1.5"}}` + "\n" +
		`{"delete":{"name":"web","namespace":"default"}}` + "\n" +
		`{"put":{"name":"api","namespace":"default","contai`
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, dir, withNetnsCheck(netnsAlive))
	if got := localPods(env.pm); got != "default/db c2 /ns/db" {
		t.Errorf("recovered pods = %q", got)
	}
	if ip := env.pm.GetLocalPods()[podmodel.ID{Name: "db", Namespace: "default"}].IPAddress.String(); ip != "10.1.1.5" {
		t.Errorf("recovered IP = %s", ip)
	}
	// Rewritten as a snapshot: no journal, no torn tail.
	load, err := readState(path)
	if err != nil {
		t.Fatal(err)
	}
	if load.Entries != 0 || load.TornTail != "" || describeRecords(load.Pods) != "default/db c2 /ns/db 10.1.1.5" {
		t.Errorf("state file after recovery: %+v", load)
	}
}

// FuzzReadState feeds arbitrary files to readState: it never panics, and what it accepts
// holds only complete records, sorted, one per pod.
func FuzzReadState(f *testing.F) {
	f.Add([]byte(`{"format": 2, "pods": [{"name": "web", "namespace": "default", "containerID": "c1", "networkNamespace": "/ns/web"}]}` + "\n" +
		`{"put":{"name":"db","namespace":"default","containerID":"c2","networkNamespace":"/ns/db"}}` + "\n" +
		`{"delete":{"name":"web","namespace":"default"}}` + "\n"))
	f.Add([]byte(`{"format": 1, "pods": []}`))
	f.Add([]byte(`{"format": 2, "pods": null}{"put":null}{"delete":{}}`))
	path := filepath.Join(f.TempDir(), "pods.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		load, err := readState(path)
		if err != nil {
			return
		}
		seen := map[podmodel.ID]bool{}
		for i, r := range load.Pods {
			if err := r.validate(); err != nil {
				t.Fatalf("accepted an incomplete record: %v", err)
			}
			if seen[r.id()] {
				t.Fatalf("pod %s twice", r.id())
			}
			seen[r.id()] = true
			if i > 0 {
				p := load.Pods[i-1]
				if p.Namespace > r.Namespace || (p.Namespace == r.Namespace && p.Name > r.Name) {
					t.Fatalf("not sorted: %s before %s", p.id(), r.id())
				}
			}
		}
	})
}
