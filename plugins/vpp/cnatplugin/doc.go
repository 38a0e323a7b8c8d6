// Package cnatplugin is the VPP cnat plugin of the agent: the descriptors of VPP's
// cnat (the service NAT Calico-VPP renders Services with), over the models of
// api/models/vpp/cnat. It is what a cnat service renderer writes to; it knows no
// Kubernetes.
//
// # Keys (what a renderer writes)
//
//	config/vpp/cnat/v2/translation-set/<label>                          TranslationSet       vpp-cnat-translation-set
//	config/vpp/cnat/v2/snat-addresses                                   SnatAddresses        vpp-cnat-snat-addresses
//	config/vpp/cnat/v2/snat-policy                                      SnatPolicy           vpp-cnat-snat-policy
//	config/vpp/cnat/v2/snat-exclude/<prefix>                            SnatExcludePrefix    vpp-cnat-snat-exclude-prefix
//	config/vpp/cnat/v2/snat-interface/<interface>/table/<TABLE>         SnatPolicyInterface  vpp-cnat-snat-policy-interface
//	config/vpp/cnat/v2/feature/<interface>/<NODE>/family/<IPV4|IPV6>    SnatFeature          vpp-cnat-snat-feature
//
// Derived (properties, no descriptor): vpp/cnat/snat-address/<IPV4|IPV6>, one per
// family SnatAddresses gives (both for an interface).
//
// Translations come in labelled sets, one scheduler value per set (the service
// renderer writes one per Service, as the NAT44 renderer writes one DNat44): at 10k
// Services and 1,000 NodePorts on 50 nodes that is 10k values instead of 60k, and a
// change of a Service is one value whose descriptor sends what changed. Within a
// set a translation is known by VPP's identity of a translation, (VIP address, VIP
// port, protocol): an update of a set deletes the translations it no longer holds,
// creates the new ones and updates the changed ones in place (the same
// cnat_translation_update, VPP keeping the id); unchanged ones cost nothing. VPP
// keeps lb_type, flow_hash_config and the VIP's is_real_ip mode from the creation
// (cnat_translation.c, cnat_client.c), so a change of one of those deletes and
// re-creates that translation. A translation belongs to one set at most: VPP holds
// one per identity, and of two sets holding the same, the later write would take it
// over and a deletion of either would delete it. The renderer never stages that;
// moving a translation from one set to another in one transaction needs the
// deletion staged first (a transaction's operations run in staging order, their
// requests pipelined in that order).
//
// The metadata of a set (*TranslationSetMetadata) holds the ids VPP gave its
// translations, kept up to date in place as replies come in: after a failure part
// of the way through, it still tells what VPP holds, a retry deletes by the right
// ids, and the next update sends every translation (what VPP holds may be neither
// the old nor the new value). A failed creation deletes what it created.
//
// # Flow
//
//	TranslationSet      ──Create/Update──> cnat_translation_update per new or changed
//	                                       translation ──> ids (metadata)
//	                    ──Update/Delete──> cnat_translation_del{id} per translation gone
//	                    <──Retrieve─────── cnat_translation_dump
//	SnatAddresses       ──Create/Update──> cnat_set_snat_addresses; Delete sets zeros
//	                    <──Retrieve─────── cnat_get_snat_addresses
//	SnatPolicy          ──Create/Update──> cnat_set_snat_policy; Delete sets NONE
//	SnatExcludePrefix   ──Create/Delete──> cnat_snat_policy_add_del_exclude_pfx
//	SnatPolicyInterface ──Create/Delete──> cnat_snat_policy_add_del_if
//	                    (the three: Retrieve infers, see below)
//	SnatFeature         ──Create/Delete──> feature_enable_disable: SNAT -> ip4/ip6-unicast
//	                                       cnat-snat-ip4/6, INPUT -> ip4/ip6-unicast
//	                                       cnat-input-ip4/6, OUTPUT -> ip4/ip6-output
//	                                       cnat-output-ip4/6
//	                    <──Retrieve─────── feature_is_enabled (every known interface, both
//	                                       families, the three nodes, pipelined)
//
// # Dependencies
//
//   - interface-exists: a translation on every interface its paths take an address
//     from; SnatAddresses, SnatPolicyInterface and SnatFeature on their interface.
//   - cnat-snat-address-exists: a SnatFeature of node SNAT on the SNAT address of its
//     family (INPUT never source-NATs; OUTPUT skips the source NAT while the address
//     is zero, cnat_node_feature.c, so neither waits for it). VPP
//     cannot unset the SNAT addresses (a literal zero counts as resolved, cnat_types.c
//     cnat_resolve_ep), so a cnat-snat feature without an address of its family would
//     rewrite sources to 0.0.0.0 or ::; the dependency keeps features off until the
//     family has an address and removes them before the addresses go.
//
// # Validation
//
// api/models/vpp/cnat's Validate* functions, shared with the renderer; each error
// names the field and its value and is a *kvapi.InvalidValueError (never retried).
// Besides what VPP refuses, a translation must have a VIP address (the model has no
// interface VIP: it would have no stable identity), endpoints of the VIP's family and
// at least one path (VPP 25.10 aborts on a translation without paths, cnat_api.c); a
// set needs a label without whitespace and holds an identity once (the fields of a
// translation's problem are named "translations[i]...."). A change of a set costs
// what changed: the messages it shares with the value accepted before are not checked
// again, and when that value was in the order of sets (cnatmodel.InSetOrder) and the
// change is a few insertions, removals or replacements that keep the order, only the
// new messages are read, with their neighbours (ValidateTranslationSetEdited).
//
// # Retrieve and resync
//
// cnat belongs to the agent: Retrieve reports every translation VPP has (FromNB),
// each in the NB set that holds its identity (in that set's order, so an unchanged
// set compares equal without allocation), the others in the set UnownedSetLabel, so a
// resync deletes those NB does not want, by the id VPP dumps, and completes a set VPP
// holds part of. VPP's dump does not
// carry is_real_ip, the translation flags or flow_hash_config (cnat_api.c,
// cnat_translation_send_details), so Retrieve takes them from the NB value of the
// same key: a drift in those fields alone is not seen.
//
// VPP has no message that reads back the SNAT policy, the excluded prefixes or the
// policy's interface maps. Their Retrieve reports what NB wants as present unless
// VPP has no SNAT addresses (cnat_get_snat_addresses), which is how a VPP that
// restarted empty looks: the resync that follows a restart then sets them again
// (see retrieveUnreadable). A stale one NB no longer wants is not found.
//
// # What it does not do
//
//   - cnat_session_purge: it deletes every translation as well (cnat_api.c), behind
//     the scheduler's back; sessions of a deleted translation age out in VPP.
//   - the cnat-input/cnat-output features (cnat_node_feature.c): Calico-VPP's service
//     path is the FIB one; add a model when a renderer needs them.
//   - the path flag CNAT_EPT_NO_NAT.
//
// Cost: one request per translation changed (none for an unchanged one); the
// requests of every set created, updated or deleted in one transaction are pipelined (CreateAsync, UpdateAsync, DeleteAsync: async.go, in
// the order the scheduler starts them), so a burst or a node leaving costs one
// pipeline, not one round trip each. Retrieve is one dump for translations, one
// request for the addresses (and for the inferred SNAT values) and two pipelined
// feature_is_enabled per known interface.
package cnatplugin
