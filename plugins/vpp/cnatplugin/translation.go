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

	pipe     *govppmux.Pipe // of Ch, made by the first request sent on it
	inflight []*inFlight    // sent on pipe, replies not read yet (async.go)
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
		// flags overwritten. So an update is the same message...
		Update: func(_ string, _, v *cnatmodel.Translation, _ *TranslationMetadata) (*TranslationMetadata, error) {
			return d.update(v, "update")
		},
		UpdateWithRecreate: func(_ string, old, v *cnatmodel.Translation, _ *TranslationMetadata) bool {
			return needsRecreate(old, v)
		},
		CreateAsync: func(_ string, v *cnatmodel.Translation) func() (*TranslationMetadata, error) {
			return d.updateAsync(v, "add")
		},
		UpdateAsync: func(_ string, _, v *cnatmodel.Translation, _ *TranslationMetadata) func() (*TranslationMetadata, error) {
			return d.updateAsync(v, "update")
		},
		Delete: func(key string, v *cnatmodel.Translation, md *TranslationMetadata) error {
			return d.deleteAsync(key, v, md)()
		},
		DeleteAsync:          d.deleteAsync,
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

// checked is a descriptor's Validate: the model's validation error (err), else the
// error of a value stored under a key (key; "" when not known) that is not its own
// (want), naming the fields the key is made of.
func checked(err error, what, key, want string, keyFields ...string) error {
	if err != nil {
		return invalid(err)
	}
	if key != "" && key != want {
		return kvapi.NewInvalidValueError(fmt.Errorf("%s key %q does not match its value (want %q)", what, key, want), keyFields...)
	}
	return nil
}

func validateTranslation(key string, v *cnatmodel.Translation) error {
	err := cnatmodel.ValidateTranslation(v)
	want, _ := cnatmodel.ModelKey(v)
	return checked(err, "cnat translation", key, want, "vip.address", "vip.port", "protocol")
}

// needsRecreate tells whether VPP cannot change old into v in place. VPP sets
// lb_type and flow_hash_config only when it creates a translation
// (cnat_translation_update: an update of an existing key keeps them), and the
// VIP's cnat client keeps the exclusive or interposed mode of is_real_ip it was
// created with (cnat_client_add). So a change of any of them deletes and creates
// the translation. (The client of a VIP address is shared by every translation of
// that address, and lives while any of them or a session does: a renderer gives
// all translations of one address the same is_real_ip.)
func needsRecreate(old, v *cnatmodel.Translation) bool {
	fhc := func(t *cnatmodel.Translation) uint32 {
		if t.GetFlowHashConfig() == 0 {
			return defaultFlowHash
		}
		return t.GetFlowHashConfig()
	}
	return old.GetLbType() != v.GetLbType() || fhc(old) != fhc(v) || old.GetIsRealIp() != v.GetIsRealIp()
}

// defaultFlowHash is VPP's IP_FLOW_HASH_DEFAULT (src and dst address and port,
// protocol), which a flow_hash_config of 0 stands for.
const defaultFlowHash = 0x9f

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

// update sends cnat_translation_update and returns the id VPP gives (the
// asynchronous form, waited for at once).
func (d *translationDescriptor) update(v *cnatmodel.Translation, op string) (*TranslationMetadata, error) {
	return d.updateAsync(v, op)()
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
