package cnatplugin

import (
	"errors"
	"fmt"

	"go.fd.io/govpp/binapi/cnat"

	cnatmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/cnat"
	ifmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/ifaceidx"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

// TranslationDescriptorName names the descriptor of cnat translations; its metadata
// map (key label: the translation key) holds *TranslationMetadata.
const TranslationDescriptorName = "vpp-cnat-translation"

// DepInterfaceExists waits for an interface a value names.
const DepInterfaceExists = "interface-exists"

// TranslationMetadata is what the scheduler keeps for a translation in VPP.
type TranslationMetadata struct {
	// ID is the id VPP allocated (a pool index, reused after a delete); it is what
	// cnat_translation_del takes.
	ID uint32
}

type translationDescriptor struct {
	vppbase.Descriptor
}

// NewTranslationDescriptor returns the descriptor of cnat translations.
func NewTranslationDescriptor(deps vppbase.DescriptorDeps) *kvapi.KVDescriptor {
	d := &translationDescriptor{Descriptor: vppbase.NewDescriptor(deps, TranslationDescriptorName)}
	return kvapi.Typed(kvapi.TypedDescriptor[*cnatmodel.Translation, *TranslationMetadata]{
		Name:        TranslationDescriptorName,
		NBKeyPrefix: cnatmodel.TranslationPrefix,
		KeySelector: func(key string) bool {
			_, _, _, ok := cnatmodel.ParseTranslationKey(key)
			return ok
		},
		ValueComparator: func(_ string, a, b *cnatmodel.Translation) bool { return sameTranslation(a, b) },
		Validate:        validateTranslation,
		Create: func(_ string, v *cnatmodel.Translation) (*TranslationMetadata, error) {
			return d.update(v, "add")
		},
		// VPP updates the translation of an existing (vip, port, protocol) in place and
		// keeps its id (cnat_translation.c, cnat_translation_update): paths replaced,
		// flags and load balancing overwritten. So an update is the same message.
		Update: func(_ string, _, v *cnatmodel.Translation, _ *TranslationMetadata) (*TranslationMetadata, error) {
			return d.update(v, "update")
		},
		Delete:               d.delete,
		Retrieve:             d.retrieve,
		IsRetriableFailure:   vppbase.IsRetriable,
		Dependencies:         translationDeps,
		RetrieveDependencies: []string{ifaceidx.DescriptorName},
		WithMetadata:         true,
	})
}

// invalid turns the model's validation error into the scheduler's.
func invalid(err error) error {
	var ie *cnatmodel.InvalidError
	if errors.As(err, &ie) {
		return kvapi.NewInvalidValueError(err, ie.Fields...)
	}
	return err
}

// keyMismatch is the error of a value stored under a key that is not its own.
func keyMismatch(what, key, want string, fields ...string) error {
	return kvapi.NewInvalidValueError(fmt.Errorf("%s key %q does not match its value (want %q)", what, key, want), fields...)
}

func validateTranslation(key string, v *cnatmodel.Translation) error {
	if err := cnatmodel.ValidateTranslation(v); err != nil {
		return invalid(err)
	}
	want, _ := cnatmodel.ModelKey(v)
	if key != "" && key != want {
		return keyMismatch("cnat translation", key, want, "vip.address", "vip.port", "protocol")
	}
	return nil
}

// translationDeps: every interface an endpoint takes its address from must exist.
func translationDeps(_ string, v *cnatmodel.Translation) []kvapi.Dependency {
	var deps []kvapi.Dependency
	seen := map[string]bool{}
	for _, p := range v.GetPaths() {
		for _, e := range []*cnatmodel.Endpoint{p.GetDst(), p.GetSrc()} {
			if name := e.GetInterface(); name != "" && !seen[name] {
				seen[name] = true
				deps = append(deps, kvapi.Dependency{Label: DepInterfaceExists, Key: ifmodel.InterfaceKey(name)})
			}
		}
	}
	return deps
}

// update sends cnat_translation_update and returns the id VPP gives.
func (d *translationDescriptor) update(v *cnatmodel.Translation, op string) (*TranslationMetadata, error) {
	what := op + " cnat translation " + cnatmodel.FormatTranslation(v)
	t, err := translationToAPI(v, d.SwIfIndex)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	reply := &cnat.CnatTranslationUpdateReply{}
	if err := vppbase.Call(d.Ch, &cnat.CnatTranslationUpdate{Translation: t}, reply); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	d.Log.WithField("id", reply.ID).Debugf("%s done", what)
	return &TranslationMetadata{ID: reply.ID}, nil
}

// delete sends cnat_translation_del with the id in the metadata; without metadata
// (never expected: Create and Retrieve give it) it finds the id in a dump.
func (d *translationDescriptor) delete(key string, v *cnatmodel.Translation, md *TranslationMetadata) error {
	what := "delete cnat translation " + cnatmodel.FormatTranslation(v)
	if md == nil {
		found, err := d.findID(key)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		md = found
	}
	if err := vppbase.Call(d.Ch, &cnat.CnatTranslationDel{ID: md.ID}, &cnat.CnatTranslationDelReply{}); err != nil {
		return fmt.Errorf("%s (id %d): %w", what, md.ID, err)
	}
	d.Log.WithField("id", md.ID).Debugf("%s done", what)
	return nil
}

// findID dumps the translations and returns the id of the one under key.
func (d *translationDescriptor) findID(key string) (*TranslationMetadata, error) {
	list, err := d.retrieve(nil)
	if err != nil {
		return nil, err
	}
	for _, kv := range list {
		if kv.Key == key {
			return kv.Metadata.(*TranslationMetadata), nil
		}
	}
	return nil, fmt.Errorf("no translation %s in VPP", key)
}

// retrieve dumps every translation: cnat belongs to the agent (nothing else
// configures it), so a resync deletes those NB no longer wants. correlate gives the
// fields VPP does not dump.
func (d *translationDescriptor) retrieve(correlate []kvapi.KVWithMetadata) ([]kvapi.KVWithMetadata, error) {
	list, err := govppmux.Dump[cnat.CnatTranslationDetails](d.Ch, &cnat.CnatTranslationDump{})
	if err != nil {
		return nil, fmt.Errorf("retrieve cnat translations: %w", err)
	}
	nb := make(map[string]*cnatmodel.Translation, len(correlate))
	for _, kv := range correlate {
		if t, ok := kv.Value.(*cnatmodel.Translation); ok {
			nb[kv.Key] = t
		}
	}
	names := d.IfaceNames()
	out := make([]kvapi.KVWithMetadata, 0, len(list))
	for _, det := range list {
		key, ok := dumpedKey(det.Translation)
		var v *cnatmodel.Translation
		if ok {
			v, ok = translationFromAPI(det.Translation, names, nb[key])
		}
		if !ok {
			d.Log.Warnf("cnat translation id %d: VIP or protocol has no key (%v/%v), skipped", det.Translation.ID, det.Translation.Vip, det.Translation.IPProto)
			continue
		}
		out = append(out, kvapi.KVWithMetadata{Key: key, Value: v, Metadata: &TranslationMetadata{ID: det.Translation.ID}, Origin: kvapi.FromNB})
	}
	return out, nil
}

// dumpedKey is the key of a dumped translation; ok is false for a VIP that is
// not an address or a protocol the model has not.
func dumpedKey(t cnat.CnatTranslation) (string, bool) {
	proto, ok := protocolFromAPI(t.IPProto)
	if !ok || uint32(t.Vip.SwIfIndex) != noInterface {
		return "", false
	}
	a, ok := vppbase.AddrFromAPI(t.Vip.Addr)
	if !ok {
		return "", false
	}
	return cnatmodel.TranslationKey(a.String(), uint32(t.Vip.Port), proto), true
}
