package store

import (
	"testing"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/dbresources"
	"github.com/contiv-vpp/contiv-vpp/api/models"
)

// FuzzDecodeEtcdValue feeds arbitrary keys and values to the decoding that the agent
// (dbwatcher: dbresources' Unmarshal per resource) and contiv-ksr (this package's decode)
// apply to what they read from etcd: each resource's value type is tried with the same
// bytes; a bad value is an error or nil, never a panic.
func FuzzDecodeEtcdValue(f *testing.F) {
	res := dbresources.GetDBResources()
	for _, seed := range []struct{ key, value string }{
		{"k8s/pod/web/namespace/default", `{"name":"web","namespace":"default","ipAddress":"10.1.1.2","hostIpAddress":"192.168.16.1"}`},
		{"k8s/service/s/namespace/default", `{"name":"s","namespace":"default","clusterIp":"10.96.0.10","port":[{"name":"dns","protocol":"UDP","port":53,"targetPort":{"intVal":53}}]}`},
		{"k8s/endpoints/s/namespace/default", `{"name":"s","namespace":"default","endpointSubsets":[{"addresses":[{"ip":"10.1.1.2"}],"ports":[{"port":53}]}]}`},
		{"k8s/node/n1", `{"name":"n1","podCIDR":"10.1.1.0/24","addresses":[{"type":"NodeInternalIP","address":"192.168.16.1"}]}`},
		{"allocatedIDs/1", `{"id":1,"name":"n1","ipAddresses":["192.168.16.1/24"]}`},
		{"k8s/namespace/default", `{"name":"default","label":[{"key":"a","value":"b"}]}`},
		{"k8s/policy/p/namespace/default", `{"name":"p","namespace":"default","policyType":"INGRESS"}`},
		{"allocatedIDs/2", "\xff\x00garbage"},
		{"k8s/pod/x", `{"name":`},
	} {
		f.Add(seed.key, []byte(seed.value), uint8(0))
	}
	f.Fuzz(func(t *testing.T, key string, data []byte, pick uint8) {
		_ = decode(key, data)
		_ = resourcePrefix(key)
		r := res[int(pick)%len(res)]
		if v, err := r.Unmarshal(data); err == nil {
			// What was decoded encodes again (the writers' path).
			if _, err := dbresources.Marshal(v); err != nil {
				t.Fatalf("%s: decoded value does not encode: %v", r.Keyword, err)
			}
		}
	})
}

// FuzzDecodeExternalConfig feeds arbitrary keys and values to the codec of the external
// configuration under /vnf-agent/<node>/config/ (dbwatcher's ExternalConfigCodec).
func FuzzDecodeExternalConfig(f *testing.F) {
	for _, seed := range []struct{ key, value string }{
		{"config/vpp/v2/interfaces/loop1", `{"name":"loop1","type":"SOFTWARE_LOOPBACK","enabled":true,"ipAddresses":["10.0.0.1/24"]}`},
		{"config/vpp/nat/v2/dnat44/svc", `{"label":"svc","staticMappings":[{"externalIp":"10.96.0.1","externalPort":80,"protocol":"TCP","localIps":[{"localIp":"10.1.1.2","localPort":8080}]}]}`},
		{"config/vpp/v2/route/vrf/0/dst/10.0.0.0/8/gw/1.1.1.1", `{"dstNetwork":"10.0.0.0/8","nextHopAddr":"1.1.1.1"}`},
		{"config/linux/interfaces/v2/interface/veth1", `{"name":"veth1","type":"VETH"}`},
		{"config/vpp/v2/interfaces/x", `{"name":`},
	} {
		f.Add(seed.key, []byte(seed.value))
	}
	f.Fuzz(func(t *testing.T, key string, data []byte) {
		_, _ = models.UnmarshalConfig(key, data)
	})
}
