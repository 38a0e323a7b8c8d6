package vppsim

import "testing"

// The values are those of VPP's macros (vppinfra/hash.h hash_v3_mix32,
// hash_v3_finalize32, hash_mix64) compiled from their C text.
func TestCnatHashesAreVPPs(t *testing.T) {
	a, b, c := v3Mix32(0x0a000001, 80, 0)
	a, b, c = v3Final32(a, b, c)
	if a != 3916182857 || b != 235100958 || c != 3414542584 {
		t.Errorf("lookup3 mix+final = %d %d %d", a, b, c)
	}
	_, y, z := jenkinsMix64(0x1122334455667788, 0x99aabbccddeeff00, 8080)
	if y != 3781694474928948753 || z != 6863710029457799244 {
		t.Errorf("hash_mix64 = %d %d", y, z)
	}
}
