package vppsim

import (
	"fmt"
	"strconv"
	"strings"
)

// cliShowACL prints the ACLs as `show acl-plugin acl [index N]` does.
func cliShowACL(st *state, args []string) string {
	st.acl.init()
	only := int64(-1)
	if len(args) >= 2 && args[0] == "index" {
		if n, err := strconv.ParseUint(args[1], 10, 32); err == nil {
			only = int64(n)
		}
	}
	var b strings.Builder
	for _, idx := range st.aclIndexes() {
		if only >= 0 && int64(idx) != only {
			continue
		}
		e := st.acl.acls[idx]
		fmt.Fprintf(&b, "acl-index %d count %d tag {%s}\n", idx, len(e.rules), e.tag)
		for n, r := range e.rules {
			family := "ipv4"
			if !r.src.Addr().Is4() {
				family = "ipv6"
			}
			fmt.Fprintf(&b, "%12d: %s %s src %s dst %s proto %d sport %s dport %s", n, family, aclActionName(r),
				r.src, r.dst, r.proto, portRange(r.sportLo, r.sport), portRange(r.dportLo, r.dport))
			if r.flagsMask != 0 || r.flagsValue != 0 {
				fmt.Fprintf(&b, " tcpflags %d mask %d", r.flagsValue, r.flagsMask)
			}
			b.WriteByte('\n')
		}
		var in, out []string
		for _, i := range st.sortedIfaces() {
			bd := st.aclBinding(i.idx)
			if bd == nil {
				continue
			}
			if containsU32(bd.input, idx) {
				in = append(in, strconv.Itoa(int(i.idx)))
			}
			if containsU32(bd.output, idx) {
				out = append(out, strconv.Itoa(int(i.idx)))
			}
		}
		fmt.Fprintf(&b, "  applied inbound on sw_if_index: %s\n", strings.Join(in, ", "))
		fmt.Fprintf(&b, "  applied outbound on sw_if_index: %s\n", strings.Join(out, ", "))
	}
	return b.String()
}

// cliShowACLInterface prints the ACL lists of the interfaces that have any,
// as `show acl-plugin interface` does.
func cliShowACLInterface(st *state, _ []string) string {
	st.acl.init()
	var b strings.Builder
	for _, i := range st.sortedIfaces() {
		bd := st.aclBinding(i.idx)
		if bd == nil {
			continue
		}
		fmt.Fprintf(&b, "sw_if_index %d:\n", i.idx)
		fmt.Fprintf(&b, "  input acl(s): %s\n", joinU32(bd.input))
		fmt.Fprintf(&b, "  output acl(s): %s\n", joinU32(bd.output))
	}
	return b.String()
}

func aclActionName(r aclRule) string {
	switch r.action {
	case 0:
		return "deny"
	case 2:
		return "permit+reflect"
	}
	return "permit"
}

func portRange(lo, hi uint16) string {
	if lo == hi {
		return strconv.Itoa(int(lo))
	}
	return fmt.Sprintf("%d-%d", lo, hi)
}

func containsU32(l []uint32, v uint32) bool {
	for _, x := range l {
		if x == v {
			return true
		}
	}
	return false
}

func joinU32(l []uint32) string {
	s := make([]string, len(l))
	for i, x := range l {
		s[i] = strconv.Itoa(int(x))
	}
	return strings.Join(s, ", ")
}
