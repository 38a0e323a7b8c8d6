// Package cnatplugin is the VPP cnat plugin of the agent: the descriptors of VPP's
// cnat (the service NAT Calico-VPP renders Services with), over the models of
// api/models/vpp/cnat. It is what a cnat service renderer writes to; it knows no
// Kubernetes.
//
// # Keys (what a renderer writes)
//
//	config/vpp/cnat/v2/translation/<vip-ip>/<vip-port>/<TCP|UDP|SCTP>   Translation          vpp-cnat-translation
//	config/vpp/cnat/v2/snat-addresses                                   SnatAddresses        vpp-cnat-snat-addresses
//	config/vpp/cnat/v2/snat-policy                                      SnatPolicy           vpp-cnat-snat-policy
//	config/vpp/cnat/v2/snat-exclude/<prefix>                            SnatExcludePrefix    vpp-cnat-snat-exclude-prefix
//	config/vpp/cnat/v2/snat-interface/<interface>/table/<TABLE>         SnatPolicyInterface  vpp-cnat-snat-policy-interface
//	config/vpp/cnat/v2/feature/<interface>/<NODE>/family/<IPV4|IPV6>    SnatFeature          vpp-cnat-snat-feature
//
// Derived (properties, no descriptor): vpp/cnat/snat-address/<IPV4|IPV6>, one per
// family SnatAddresses gives (both for an interface).
//
// A translation's key is VPP's identity of a translation, (VIP address, VIP port,
// protocol): changing its paths or flags (alloc_port, no_return_session) is an
// Update of the same key, done in place by VPP (the same cnat_translation_update,
// the id kept). VPP keeps lb_type, flow_hash_config and the VIP's is_real_ip mode
// from the creation (cnat_translation.c, cnat_client.c), so changing one of those
// deletes and re-creates the translation (UpdateWithRecreate). A renderer that
// moves a Service to another VIP or port deletes one key and creates another. Build keys with the model's functions (cnatmodel.TranslationKey or
// models.ModelKey); addresses in keys are canonical.
//
// # Flow
//
//	Translation         ──Create/Update──> cnat_translation_update ──> id (metadata, *TranslationMetadata)
//	                    ──Delete─────────> cnat_translation_del{id}
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
// Besides what VPP refuses, a translation must have an address VIP (an interface VIP
// would have no stable key), endpoints of the VIP's family and at least one path
// (VPP 25.10 aborts on a translation without paths, cnat_api.c).
//
// # Retrieve and resync
//
// cnat belongs to the agent: Retrieve reports every translation VPP has (FromNB), so
// a resync deletes those NB does not want, by the id VPP dumps. VPP's dump does not
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
// Cost: one request per value changed; translations created, updated or deleted in
// one transaction are pipelined (CreateAsync, UpdateAsync, DeleteAsync: async.go, in
// the order the scheduler starts them), so a burst or a node leaving costs one
// pipeline, not one round trip each. Retrieve is one dump for translations, one
// request for the addresses (and for the inferred SNAT values) and two pipelined
// feature_is_enabled per known interface.
package cnatplugin
