package ipam

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

func TestAllocationsRESTListsPodsSortedByNamespaceAndName(t *testing.T) {
	mux := http.NewServeMux()
	p, _ := testPlugin(t, defaultConf, 1, func(d *Deps) { d.HTTP = mux })
	srv := httptest.NewServer(mux)
	defer srv.Close()

	code, body := get(t, srv.URL+AllocationsPath)
	if code != http.StatusOK || strings.TrimSpace(body) != "{\n  \"Pods\": []\n}" {
		t.Errorf("before resync: %d %s", code, body)
	}

	if err := p.Resync(api.NewDBResync(), kubeState(kubePod("kube-system/dns", "10.1.1.20")), 1, nil); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"web/b", "default/z", "web/a"} {
		if _, err := p.AllocatePodIP(pid(id), "", ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.AllocatePodCustomIfIP(pid("web/a"), "memif1", ""); err != nil {
		t.Fatal(err)
	}

	code, body = get(t, srv.URL+AllocationsPath)
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	var got struct {
		Pods []struct {
			PodID       map[string]string
			MainIP      string
			CustomIfIPs map[string]string
		}
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("%v in %s", err, body)
	}
	var lines []string
	for _, a := range got.Pods {
		lines = append(lines, a.PodID["namespace"]+"/"+a.PodID["name"]+" "+a.MainIP+" "+a.CustomIfIPs["memif1"])
	}
	want := []string{
		"default/z 10.1.1.22 ",
		"kube-system/dns 10.1.1.20 ",
		"web/a 10.1.1.23 10.1.1.24",
		"web/b 10.1.1.21 ",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("allocations:\n%s\nwant:\n%s\nbody: %s", strings.Join(lines, "\n"), strings.Join(want, "\n"), body)
	}
	if !strings.Contains(body, `"PodID": {`) || !strings.Contains(body, `"name": "z"`) || !strings.Contains(body, `"CustomIfIPs": {}`) {
		t.Errorf("JSON shape: %s", body)
	}
}

func TestIPAMDataOfNode1WithDefaultConfig(t *testing.T) {
	p := resynced(t, defaultConf, 1)
	nodeIP, _, err := p.NodeIPAddress(1)
	if err != nil {
		t.Fatal(err)
	}
	data, err := p.IPAMData(nodeIP)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(data)
	var got map[string]any
	_ = json.Unmarshal(body, &got)
	for key, want := range map[string]any{
		"nodeId": float64(1), "nodeName": "node1", "nodeIP": "192.168.16.1",
		"podSubnetThisNode": "10.1.1.0/24", "vppHostNetwork": "172.30.1.0/24",
	} {
		if got[key] != want {
			t.Errorf("%s = %v, want %v", key, got[key], want)
		}
	}
	cfg, ok := got["config"].(map[string]any)
	if !ok || cfg["podSubnetCIDR"] != "10.1.0.0/16" || cfg["podSubnetOneNodePrefixLen"] != float64(24) ||
		cfg["nodeInterconnectCIDR"] != "192.168.16.0/24" || cfg["useExternalIPAM"] != false {
		t.Errorf("config = %v", got["config"])
	}
}

func TestIPAMDataHandlerAnswers500WithoutNodeIP(t *testing.T) {
	p := resynced(t, defaultConf, 1)
	var mu sync.Mutex
	var nodeIP net.IP
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+IPAMPath, p.IPAMDataHandler(func() net.IP {
		mu.Lock()
		defer mu.Unlock()
		return nodeIP
	}))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	code, body := get(t, srv.URL+IPAMPath)
	if code != http.StatusInternalServerError || !strings.Contains(body, `"error": "Error getting node IP"`) {
		t.Errorf("without node IP: %d %s", code, body)
	}
	mu.Lock()
	nodeIP = net.ParseIP("192.168.16.1")
	mu.Unlock()
	code, body = get(t, srv.URL+IPAMPath)
	if code != http.StatusOK || !strings.Contains(body, `"nodeIP": "192.168.16.1"`) ||
		!strings.Contains(body, `"podSubnetThisNode": "10.1.1.0/24"`) || !strings.Contains(body, `"vppHostNetwork": "172.30.1.0/24"`) {
		t.Errorf("with node IP: %d %s", code, body)
	}
}

func TestIPAMRESTShowsBothFamiliesOnADualStackNode(t *testing.T) {
	mux := http.NewServeMux()
	p, _ := testPlugin(t, dualConf, 1, func(d *Deps) { d.HTTP = mux })
	if err := p.Resync(api.NewDBResync(), kubeState(), 1, nil); err != nil {
		t.Fatal(err)
	}
	mux.HandleFunc("GET "+IPAMPath, p.IPAMDataHandler(func() net.IP { return net.ParseIP("192.168.16.1") }))
	if _, err := p.AllocatePodIPs(pid("default/a"), "", ""); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()

	_, body := get(t, srv.URL+IPAMPath)
	var got struct {
		PodSubnet  string         `json:"podSubnetThisNode"`
		PodSubnet6 string         `json:"podSubnetThisNodeIPv6"`
		HostNet6   string         `json:"vppHostNetworkIPv6"`
		RawConfig  map[string]any `json:"config"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("%v in %s", err, body)
	}
	v6, _ := got.RawConfig["ipv6"].(map[string]any)
	if got.PodSubnet != "10.1.1.0/24" || got.PodSubnet6 != "fd00:10:1:1::/64" || got.HostNet6 != "fd00:172:30::1:0/112" ||
		got.RawConfig["podSubnetCIDR"] != "10.1.0.0/16" || v6["podSubnetCIDR"] != "fd00:10:1::/48" || v6["podSubnetOneNodePrefixLen"] != float64(64) {
		t.Errorf("GET %s on a dual-stack node:\n%s", IPAMPath, body)
	}

	_, body = get(t, srv.URL+AllocationsPath)
	if !strings.Contains(body, `"MainIP": "10.1.1.2"`) || !strings.Contains(body, `"MainIPs": [`) || !strings.Contains(body, `"fd00:10:1:1::2"`) {
		t.Errorf("GET %s on a dual-stack node lacks the IPv6 address:\n%s", AllocationsPath, body)
	}
	// A single-stack node's answers keep their shape: no IPv6 fields at all.
	single := resynced(t, defaultConf, 1)
	data, _ := single.IPAMData(net.ParseIP("192.168.16.1"))
	raw, _ := json.Marshal(data)
	if strings.Contains(string(raw), "IPv6") || strings.Contains(string(raw), `"ipv6"`) {
		t.Errorf("single-stack IPAM data shows IPv6 fields: %s", raw)
	}
}
