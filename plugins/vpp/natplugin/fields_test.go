package natplugin

import (
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"testing"
	"unsafe"

	"go.fd.io/govpp/binapi/nat_types"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
)

// The field-coverage tests: a field added to the DNat44 model (or to the parsed
// mapping) and forgotten by the comparisons or the planner makes one of them fail.

// notComparedFields lists the fields of the DNat44 model (full names) that the
// field-by-field comparison (sameDNat44 and the functions it uses) deliberately
// ignores, with the reason. None today.
var notComparedFields = map[protoreflect.FullName]string{}

// modelFields returns the full name of every field of md and of the messages it
// contains, recursively.
func modelFields(md protoreflect.MessageDescriptor) []protoreflect.FullName {
	var out []protoreflect.FullName
	seen := map[protoreflect.FullName]bool{}
	var walk func(md protoreflect.MessageDescriptor)
	walk = func(md protoreflect.MessageDescriptor) {
		if seen[md.FullName()] {
			return
		}
		seen[md.FullName()] = true
		fs := md.Fields()
		for i := range fs.Len() {
			fd := fs.Get(i)
			out = append(out, fd.FullName())
			if fd.Message() != nil {
				walk(fd.Message())
			}
		}
	}
	walk(md)
	return out
}

// fillMessage sets every field of m, recursively: scalars to a non-zero value, lists to
// one element, messages to a filled message. So a field added to the model is set too.
func fillMessage(m protoreflect.Message) {
	fs := m.Descriptor().Fields()
	for i := range fs.Len() {
		fd := fs.Get(i)
		switch {
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			mp.Set(protoreflect.MapKey(otherScalar(fd.MapKey(), fd.MapKey().Default())), elementValue(fd.MapValue(), mp.NewValue))
		case fd.IsList():
			l := m.Mutable(fd).List()
			l.Append(elementValue(fd, l.NewElement))
		case fd.Message() != nil:
			fillMessage(m.Mutable(fd).Message())
		default:
			m.Set(fd, otherScalar(fd, fd.Default()))
		}
	}
}

// elementValue is a filled element of list or map field fd (newElem: a new element of it).
func elementValue(fd protoreflect.FieldDescriptor, newElem func() protoreflect.Value) protoreflect.Value {
	if fd.Message() != nil {
		v := newElem()
		fillMessage(v.Message())
		return v
	}
	return otherScalar(fd, fd.Default())
}

// otherScalar returns a value of scalar field fd other than v.
func otherScalar(fd protoreflect.FieldDescriptor, v protoreflect.Value) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(!v.Bool())
	case protoreflect.EnumKind:
		vals := fd.Enum().Values()
		for i := range vals.Len() {
			if n := vals.Get(i).Number(); n != v.Enum() {
				return protoreflect.ValueOfEnum(n)
			}
		}
		return protoreflect.ValueOfEnum(v.Enum() + 1)
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(v.String() + "x")
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes(append(slices.Clone(v.Bytes()), 'x'))
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(v.Int()) + 1)
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(v.Int() + 1)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(v.Uint()) + 1)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(v.Uint() + 1)
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(float32(v.Float()) + 1)
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(v.Float() + 1)
	}
	panic(fmt.Sprintf("field %s: kind %v not handled", fd.FullName(), fd.Kind()))
}

// changeField changes field fd of m (filled), whatever its kind: a scalar to another
// value, a list gets one more element, a map is emptied, a message is changed in its
// first field.
func changeField(m protoreflect.Message, fd protoreflect.FieldDescriptor) {
	switch {
	case fd.IsMap():
		m.Clear(fd)
	case fd.IsList():
		l := m.Mutable(fd).List()
		l.Append(elementValue(fd, l.NewElement))
	case fd.Message() != nil:
		sub := m.Mutable(fd).Message()
		changeField(sub, sub.Descriptor().Fields().Get(0))
	default:
		m.Set(fd, otherScalar(fd, m.Get(fd)))
	}
}

// messagesOf returns m and every message it holds (lists: their first element).
func messagesOf(m protoreflect.Message) []protoreflect.Message {
	out := []protoreflect.Message{m}
	fs := m.Descriptor().Fields()
	for i := range fs.Len() {
		fd := fs.Get(i)
		switch {
		case fd.Message() == nil || fd.IsMap():
		case fd.IsList():
			if l := m.Get(fd).List(); l.Len() > 0 {
				out = append(out, messagesOf(l.Get(0).Message())...)
			}
		case m.Has(fd):
			out = append(out, messagesOf(m.Get(fd).Message())...)
		}
	}
	return out
}

// TestSameComparesEveryModelField: for every field of DNat44 and of the messages in
// it, two values that differ in that field only (every other field set) are not the
// same for the field-by-field comparison (sameDNat44, with staticComparer, sameLocals
// and sameIdentity under it, which also pair the entries of updates and validations),
// unless notComparedFields lists it. A field added to the model and not to the
// comparison would have an update of that field alone taken for no change.
func TestSameComparesEveryModelField(t *testing.T) {
	base := &nat.DNat44{}
	fillMessage(base.ProtoReflect())
	if !sameDNat44(base, proto.Clone(base).(*nat.DNat44)) {
		t.Fatal("sameDNat44 of a value and its copy is false")
	}
	covered := map[protoreflect.FullName]bool{}
	for i := range len(messagesOf(base.ProtoReflect())) {
		fs := messagesOf(base.ProtoReflect())[i].Descriptor().Fields()
		for j := range fs.Len() {
			fd := fs.Get(j)
			changed := proto.Clone(base).(*nat.DNat44)
			changeField(messagesOf(changed.ProtoReflect())[i], fd)
			covered[fd.FullName()] = true
			if proto.Equal(base, changed) {
				t.Fatalf("changing %s changed nothing", fd.FullName())
			}
			same := sameDNat44(base, changed)
			if reason, ignored := notComparedFields[fd.FullName()]; ignored {
				if !same {
					t.Errorf("%s is listed as not compared (%s), but sameDNat44 tells values differing in it apart", fd.FullName(), reason)
				}
				continue
			}
			if same {
				t.Errorf("sameDNat44 takes two values differing in %s only for the same: compare it (same.go), or list it in notComparedFields with the reason", fd.FullName())
			}
		}
	}
	for _, f := range modelFields(base.ProtoReflect().Descriptor()) {
		if !covered[f] {
			t.Errorf("field %s was not reached by the test (a map or message field left unset by fillMessage?)", f)
		}
	}
	for f := range notComparedFields {
		if !covered[f] {
			t.Errorf("notComparedFields lists %s, which the model does not have", f)
		}
	}
}

// plannerFieldChanges are, by model field, a valid change of that field alone (with
// what validity needs along with it) to planBase, for TestPlannerSeesEveryModelField.
var plannerFieldChanges = map[protoreflect.FullName]func(v *nat.DNat44){
	"contiv.vpp.nat.DNat44.st_mappings": func(v *nat.DNat44) {
		v.StMappings = append(v.StMappings, sm("10.96.0.12", 80, nat.DNat44_TCP, lip("10.1.1.9", 80, 0, 0)))
	},
	"contiv.vpp.nat.DNat44.id_mappings": func(v *nat.DNat44) {
		v.IdMappings = append(v.IdMappings, &nat.DNat44_IdentityMapping{IpAddress: "192.168.16.2"})
	},
	"contiv.vpp.nat.DNat44.StaticMapping.external_interface": func(v *nat.DNat44) {
		v.StMappings[0].ExternalIp, v.StMappings[0].ExternalInterface = "", "eth0"
	},
	"contiv.vpp.nat.DNat44.StaticMapping.external_ip":   func(v *nat.DNat44) { v.StMappings[0].ExternalIp = "10.96.0.99" },
	"contiv.vpp.nat.DNat44.StaticMapping.external_port": func(v *nat.DNat44) { v.StMappings[0].ExternalPort = 81 },
	"contiv.vpp.nat.DNat44.StaticMapping.local_ips": func(v *nat.DNat44) {
		v.StMappings[1].LocalIps = append(v.StMappings[1].LocalIps, lip("10.1.2.5", 5353, 0, 2))
	},
	"contiv.vpp.nat.DNat44.StaticMapping.protocol":  func(v *nat.DNat44) { v.StMappings[0].Protocol = nat.DNat44_UDP },
	"contiv.vpp.nat.DNat44.StaticMapping.twice_nat": func(v *nat.DNat44) { v.StMappings[0].TwiceNat = nat.DNat44_StaticMapping_ENABLED },
	"contiv.vpp.nat.DNat44.StaticMapping.twice_nat_pool_ip": func(v *nat.DNat44) {
		v.StMappings[0].TwiceNatPoolIp = "10.200.0.1"
	},
	"contiv.vpp.nat.DNat44.StaticMapping.session_affinity":    func(v *nat.DNat44) { v.StMappings[1].SessionAffinity = 301 },
	"contiv.vpp.nat.DNat44.StaticMapping.LocalIP.vrf_id":      func(v *nat.DNat44) { v.StMappings[0].LocalIps[0].VrfId = 3 },
	"contiv.vpp.nat.DNat44.StaticMapping.LocalIP.local_ip":    func(v *nat.DNat44) { v.StMappings[0].LocalIps[0].LocalIp = "10.1.1.99" },
	"contiv.vpp.nat.DNat44.StaticMapping.LocalIP.local_port":  func(v *nat.DNat44) { v.StMappings[0].LocalIps[0].LocalPort = 9090 },
	"contiv.vpp.nat.DNat44.StaticMapping.LocalIP.probability": func(v *nat.DNat44) { v.StMappings[1].LocalIps[0].Probability = 5 },
	"contiv.vpp.nat.DNat44.IdentityMapping.vrf_id":            func(v *nat.DNat44) { v.IdMappings[0].VrfId = 3 },
	"contiv.vpp.nat.DNat44.IdentityMapping.interface": func(v *nat.DNat44) {
		v.IdMappings[0].IpAddress, v.IdMappings[0].Interface = "", "eth0"
	},
	"contiv.vpp.nat.DNat44.IdentityMapping.ip_address": func(v *nat.DNat44) { v.IdMappings[0].IpAddress = "192.168.16.9" },
	"contiv.vpp.nat.DNat44.IdentityMapping.port":       func(v *nat.DNat44) { v.IdMappings[0].Port = 4790 },
	"contiv.vpp.nat.DNat44.IdentityMapping.protocol":   func(v *nat.DNat44) { v.IdMappings[0].Protocol = nat.DNat44_TCP },
}

// notPlannedFields lists the model fields a change of which is never planned as an
// update, with the reason.
var notPlannedFields = map[protoreflect.FullName]string{
	"contiv.vpp.nat.DNat44.label": "the label is the key: a value of another label is another key (a Delete and a Create), never an Update",
}

// planBase is a value where every field matters to VPP: a single-local mapping, an LB
// mapping (probabilities, affinity) and an identity mapping.
func planBase() *nat.DNat44 {
	return dnat("svc", sts(cloneStatic(webSingle), cloneStatic(dnsLB)), vxlanOf())
}

// TestPlannerSeesEveryModelField: for every field of the model, a change of that field
// in a value where it matters to VPP is planned as requests (plannerFieldChanges), and
// such a change exists for every field but those notPlannedFields lists. A field added
// to the model makes this test fail until a change of it is listed: then the planner
// must send something for it (parse it into mapping, compare it in mapping.equal, put
// it in the requests).
func TestPlannerSeesEveryModelField(t *testing.T) {
	fields := modelFields((&nat.DNat44{}).ProtoReflect().Descriptor())
	for _, f := range fields {
		change, ok := plannerFieldChanges[f]
		if _, ignored := notPlannedFields[f]; ignored {
			if ok {
				t.Errorf("%s is both changed and listed in notPlannedFields", f)
			}
			continue
		}
		if !ok {
			t.Errorf("no change of %s in plannerFieldChanges: add one that VPP must see, or list the field in notPlannedFields with the reason", f)
			continue
		}
		from, to := planBase(), planBase()
		change(to)
		if err := ValidateDNat44("", to); err != nil {
			t.Errorf("%s: the changed value is not valid: %v", f, err)
			continue
		}
		steps, err := planChange(from, to, nil, testResolve)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if len(steps) == 0 {
			t.Errorf("a change of %s alone plans no request", f)
		}
		if sameDNat44(from, to) || EquivalentDNat44(from, to) {
			t.Errorf("a change of %s alone is taken for no change (sameDNat44 %v, EquivalentDNat44 %v)", f,
				sameDNat44(from, to), EquivalentDNat44(from, to))
		}
	}
	for f := range plannerFieldChanges {
		if !slices.Contains(fields, f) {
			t.Errorf("plannerFieldChanges changes %s, which the model does not have", f)
		}
	}
}

// TestMappingEqualComparesEveryField: two parsed mappings (or locals) differing in one
// field are not equal; a field added to mapping or local and not to mapping.equal
// would make the planner skip a change of it.
func TestMappingEqualComparesEveryField(t *testing.T) {
	base := mapping{kind: kindLB, proto: 6, extIP: netip.MustParseAddr("10.96.0.1"), extIf: "eth0", extPort: 80,
		twice: nat_types.NAT_IS_TWICE_NAT, pool: netip.MustParseAddr("10.200.0.1"), affinity: 60, vrf: 2,
		locals: []local{{ip: netip.MustParseAddr("10.1.1.2"), port: 8080, vrf: 2, prob: 1}}}
	other := mapping{kind: kindIdentity, proto: 17, extIP: netip.MustParseAddr("10.96.0.2"), extIf: "eth1", extPort: 81,
		twice: nat_types.NAT_IS_SELF_TWICE_NAT, pool: netip.MustParseAddr("10.200.0.2"), affinity: 61, vrf: 3,
		locals: []local{{ip: netip.MustParseAddr("10.1.1.3"), port: 8081, vrf: 3, prob: 2}}}
	bv := reflect.ValueOf(base)
	for i := range bv.NumField() {
		m := base
		setField(reflect.ValueOf(&m).Elem().Field(i), reflect.ValueOf(&other).Elem().Field(i))
		if reflect.DeepEqual(m, base) {
			t.Fatalf("other has the base's %s: make them differ", bv.Type().Field(i).Name)
		}
		if m.equal(&base) || base.equal(&m) {
			t.Errorf("mapping.equal takes mappings differing in %s only for equal", bv.Type().Field(i).Name)
		}
	}
	lv := reflect.ValueOf(base.locals[0])
	for i := range lv.NumField() {
		l := base.locals[0]
		setField(reflect.ValueOf(&l).Elem().Field(i), reflect.ValueOf(&other.locals[0]).Elem().Field(i))
		m := base
		m.locals = []local{l}
		if m.equal(&base) {
			t.Errorf("mapping.equal takes mappings whose locals differ in %s only for equal", lv.Type().Field(i).Name)
		}
	}
}

// setField sets the (unexported) struct field dst, addressable, to the field src.
func setField(dst, src reflect.Value) {
	dst = reflect.NewAt(dst.Type(), unsafe.Pointer(dst.UnsafeAddr())).Elem()
	dst.Set(reflect.NewAt(src.Type(), unsafe.Pointer(src.UnsafeAddr())).Elem())
}
