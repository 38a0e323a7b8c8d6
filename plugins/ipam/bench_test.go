package ipam

import (
	"fmt"
	"io"
	"testing"

	"github.com/sirupsen/logrus"
)

// BenchmarkAllocateRelease250Pods measures one pod churn step on a node that holds 250
// pods: allocate an IP for a new pod, release the IP of the oldest one. The /24 case is
// a nearly full subnet (250 of 252 addresses), where a free address must be searched
// for; the /16 and IPv6 /64 cases show that the subnet size does not matter; the
// dual-stack case allocates and releases an address of each family per step. The log
// is at warning level, so the numbers are those of the IPAM, not of log formatting.
func BenchmarkAllocateRelease250Pods(b *testing.B) {
	for _, tc := range []struct{ name, conf string }{
		{"ipv4-per-node-24", defaultConf},
		{"ipv4-per-node-16", "ipamConfig:\n  podSubnetCIDR: 10.0.0.0/8\n  podSubnetOneNodePrefixLen: 16\n  serviceCIDR: 100.96.0.0/12\n"},
		{"ipv6-per-node-64", ipv6Conf},
		{"dual-stack-24-and-64", dualConf}, // one call, both families: about twice ipv4-per-node-24
	} {
		b.Run(tc.name, func(b *testing.B) {
			const held = 250
			p := resynced(b, tc.conf, 1)
			log := logrus.New()
			log.SetOutput(io.Discard)
			log.SetLevel(logrus.WarnLevel)
			p.Log = log
			ids := make([]PodID, held+b.N)
			for i := range ids {
				ids[i] = PodID{Name: fmt.Sprint("pod-", i), Namespace: "default"}
			}
			for i := 0; i < held; i++ {
				if _, err := p.AllocatePodIP(ids[i], "", ""); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := p.AllocatePodIP(ids[held+i], "", ""); err != nil {
					b.Fatal(err)
				}
				if err := p.ReleasePodIPs(ids[i]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
