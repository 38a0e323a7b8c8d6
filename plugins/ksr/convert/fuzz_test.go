package convert

import (
	"net"
	"testing"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/dbresources"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/service"
)

// FuzzServiceSanitize feeds arbitrary Service values (as etcd would hold them) and limits
// to Sanitize: what it keeps is within the limits, and it never panics.
func FuzzServiceSanitize(f *testing.F) {
	f.Add([]byte(`{"name":"s","namespace":"default","clusterIp":"10.96.0.10","port":[{"name":"a","port":80,"targetPort":{"intVal":8080},"nodePort":30080},{"port":70000},{"port":81,"nodePort":99999}],"externalIps":["x","1.2.3.4"]}`), "30000-32767", "10.96.0.0/12")
	f.Add([]byte(`{"clusterIp":"None","healthCheckNodePort":5}`), "1-65535", "")
	res, _ := dbresources.GetResourceByKey(service.Key("s", "default"))
	f.Fuzz(func(t *testing.T, data []byte, portRange, cidrs string) {
		v, err := res.Unmarshal(data)
		if err != nil {
			return
		}
		limits := DefaultServiceLimits()
		if lo, hi, err := ParseNodePortRange(portRange); err == nil {
			limits.NodePortMin, limits.NodePortMax = lo, hi
		}
		if nets, err := ParseServiceCIDRs(cidrs); err == nil {
			limits.ServiceCIDRs = nets
		}
		s := v.(*service.Service)
		_ = limits.Sanitize(s)
		for _, p := range s.GetPort() {
			if p.GetPort() < 1 || p.GetPort() > 65535 || (p.GetNodePort() != 0 && !limits.validNodePort(p.GetNodePort())) {
				t.Fatalf("kept port %v", p)
			}
		}
		if ip := s.GetClusterIp(); ip != "" && ip != "None" {
			if parsed := net.ParseIP(ip); parsed == nil || (len(limits.ServiceCIDRs) > 0 && !inAny(limits.ServiceCIDRs, parsed)) {
				t.Fatalf("kept cluster IP %q", ip)
			}
		}
	})
}
