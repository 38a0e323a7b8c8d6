package archtest

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestModuleLayering is the check itself: the module's real import graph breaks no rule.
func TestModuleLayering(t *testing.T) {
	root, err := ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	if err := statSources(root); err != nil {
		t.Fatal(err)
	}
	pkgs, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages in %s; expected the whole module", len(pkgs), root)
	}
	seen := map[string]bool{}
	for _, p := range pkgs {
		seen[p.ImportPath] = true
	}
	for _, want := range []string{"plugins/govppmux", "plugins/kvscheduler", "pkg/vppsim", "api/models"} {
		if !seen[Module+"/"+want] {
			t.Fatalf("go list did not list %s: the rules would check nothing", want)
		}
	}
	for _, v := range Check(pkgs, Rules) {
		t.Errorf("forbidden import: %s", v)
	}
}

// statSources opens every directory and stats every Go file and go.mod of the
// module. The go command caches a test result against the files the test touched;
// the graph comes from a `go list` child process it does not see, so without this a
// new forbidden import would be answered from the cache.
func statSources(root string) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			f, err := os.Open(path) // records the directory listing (new files)
			if err != nil {
				return err
			}
			return f.Close()
		}
		if strings.HasSuffix(path, ".go") || d.Name() == "go.mod" {
			_, err := os.Stat(path)
			return err
		}
		return nil
	})
}

// pkg builds a synthetic package; imports are relative to Module, deps are computed
// by Check's fallback (direct imports) unless the test fills them in.
func pkg(path string, imports ...string) Package {
	p := Package{ImportPath: Module + "/" + path}
	for _, i := range imports {
		if strings.Contains(i, ".") && !strings.HasPrefix(i, "plugins") { // external
			p.Imports = append(p.Imports, i)
			continue
		}
		p.Imports = append(p.Imports, Module+"/"+i)
	}
	return p
}

// withDeps fills Deps with the transitive closure of Imports over the graph.
func withDeps(pkgs []Package) []Package {
	imports := map[string][]string{}
	for _, p := range pkgs {
		imports[p.ImportPath] = p.Imports
	}
	for i := range pkgs {
		seen := map[string]bool{}
		var visit func(string)
		visit = func(n string) {
			for _, d := range imports[n] {
				if !seen[d] {
					seen[d] = true
					pkgs[i].Deps = append(pkgs[i].Deps, d)
					visit(d)
				}
			}
		}
		visit(pkgs[i].ImportPath)
	}
	return pkgs
}

// TestCheckReportsForbiddenImports is the test of the test: a synthetic graph with
// one forbidden import per rule is reported, naming the import chain and the rule.
func TestCheckReportsForbiddenImports(t *testing.T) {
	graph := withDeps([]Package{
		pkg("plugins/controller/api"),
		pkg("plugins/govppmux", "plugins/controller/api", "pkg/health"),
		pkg("pkg/health"),
		pkg("plugins/kvscheduler/api"),
		pkg("plugins/kvscheduler", "plugins/kvscheduler/api", "plugins/rest"),
		pkg("plugins/rest"),
		pkg("pkg/vppsim"),
		pkg("pkg/vppsim/nat", "pkg/vppsim"), // the simulator's own packages are fine
		pkg("plugins/vpp/natplugin", "plugins/vpp/internal/vppbase"),
		pkg("plugins/vpp/internal/vppbase", "pkg/vppsim"), // forbidden, reached indirectly by natplugin
		pkg("cmd/contiv-agent", "pkg/vppsim", "plugins/govppmux"),
		pkg("standalone", "pkg/vppsim"),
		pkg("api/models/vpp/nat", "api/models/internal/keyutil", "google.golang.org/protobuf/proto"),
		pkg("api/models/internal/keyutil", "pkg/infra"),
		pkg("pkg/infra"),
		pkg("plugins/linux/l3plugin", "api/k8s/pod"),
		pkg("api/k8s/pod"),
		pkg("api/k8s/dbresources", "api/k8s/pod", "pkg/pbjson", "plugins/ksr/convert"),
		pkg("pkg/pbjson"),
		pkg("plugins/ksr/convert"),
		pkg("pkg/etcdtest", "plugins/kvscheduler/api"),
		pkg("plugins/service", "plugins/ksr/convert"),
		pkg("internal/testkit", "pkg/health"),
	})
	got := map[string]bool{}
	for _, v := range Check(graph, Rules) {
		got[v.String()] = true
	}
	want := []string{
		"plugins/govppmux -> plugins/controller/api: VPP and Linux plugins never depend on Contiv plugins, ksr or the Kubernetes models",
		"plugins/kvscheduler -> plugins/rest: the scheduler depends on no plugin",
		"plugins/vpp/internal/vppbase -> pkg/vppsim: only cmd/, standalone/ and tests depend on the VPP simulator",
		"plugins/vpp/natplugin -> plugins/vpp/internal/vppbase -> pkg/vppsim: only cmd/, standalone/ and tests depend on the VPP simulator",
		"api/models/internal/keyutil -> pkg/infra: api/models depends on no package of the module but other models",
		"api/models/vpp/nat -> api/models/internal/keyutil -> pkg/infra: api/models depends on no package of the module but other models",
		"plugins/linux/l3plugin -> api/k8s/pod: VPP and Linux plugins never depend on Contiv plugins, ksr or the Kubernetes models",
		"api/k8s/dbresources -> plugins/ksr/convert: the api floor depends only on api/ and pkg/",
		"pkg/etcdtest -> plugins/kvscheduler/api: pkg/ depends on nothing of the module above it",
		"plugins/service -> plugins/ksr/convert: no other plugin depends on the reflector (plugins/ksr)",
		"internal/testkit -> pkg/health: the test kit (internal/testkit) depends on nothing of the module",
	}
	for _, w := range want {
		if !got[w] {
			t.Errorf("violation not reported: %s", w)
		}
		delete(got, w)
	}
	for g := range got {
		t.Errorf("unexpected violation: %s", g)
	}
}

// TestCheckAcceptsAllowedImports: the allowed edges of the layering produce no report.
func TestCheckAcceptsAllowedImports(t *testing.T) {
	graph := withDeps([]Package{
		pkg("plugins/kvscheduler", "plugins/kvscheduler/api", "pkg/infra"),
		pkg("plugins/kvscheduler/api"),
		pkg("pkg/infra"),
		pkg("plugins/vpp/natplugin", "plugins/kvscheduler/api", "plugins/govppmux", "api/models/vpp/nat"),
		pkg("plugins/govppmux", "pkg/infra", "plugins/rest"),
		pkg("plugins/rest"),
		pkg("api/models/vpp/nat", "api/models/internal/keyutil"),
		pkg("api/models/internal/keyutil"),
		pkg("plugins/service", "plugins/vpp/natplugin", "plugins/controller/api"),
		pkg("plugins/controller/api"),
		pkg("cmd/vpp-sim", "pkg/vppsim"),
		pkg("pkg/vppsim"),
		pkg("api/k8s/dbresources", "api/k8s/pod", "pkg/pbjson"),
		pkg("api/k8s/pod"),
		pkg("pkg/pbjson"),
		pkg("plugins/ksr", "api/k8s/dbresources", "plugins/ksr/convert"),
		pkg("plugins/ksr/convert", "api/k8s/pod"),
		pkg("cmd/contiv-ksr", "plugins/ksr"),
		pkg("standalone", "plugins/ksr/convert", "pkg/vppsim"),
		pkg("plugins/policy", "api/k8s/pod", "plugins/controller/api"),
	})
	for _, v := range Check(graph, Rules) {
		t.Errorf("allowed import reported: %s", v)
	}
}

// TestDecodeGoListStream reads the concatenated JSON objects go list prints and
// surfaces a package error with the package named.
func TestDecodeGoListStream(t *testing.T) {
	pkgs, err := decode(strings.NewReader(`{"ImportPath":"a","Imports":["b"]}
{"ImportPath":"b"}`))
	if err != nil || len(pkgs) != 2 || pkgs[0].Imports[0] != "b" {
		t.Fatalf("decode: %v %+v", err, pkgs)
	}
	_, err = decode(strings.NewReader(`{"ImportPath":"bad","Error":{"Err":"no Go files"}}`))
	if err == nil || !strings.Contains(err.Error(), "bad") {
		t.Fatalf("package error not surfaced: %v", err)
	}
}
