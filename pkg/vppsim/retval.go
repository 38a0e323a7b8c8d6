package vppsim

import "go.fd.io/govpp/api"

// Reply codes (the "retval" field of replies) the simulator sends. Each
// constant carries the name of VPP's VNET_API_ERROR_* code it stands for;
// the values are taken from govpp's api.VPPApiError table, which is generated
// from VPP's vnet/api_errno.h, so a client sees exactly the error VPP would
// report. Where VPP's choice is not obvious the handler documents why it
// uses a code.
const (
	// retvalOK is success.
	retvalOK int32 = 0
	// retvalUnspecified is VNET_API_ERROR_UNSPECIFIED (-1).
	retvalUnspecified = int32(api.UNSPECIFIED)
	// retvalInvalidSwIfIndex is VNET_API_ERROR_INVALID_SW_IF_INDEX (-2):
	// the sw_if_index names no interface.
	retvalInvalidSwIfIndex = int32(api.INVALID_SW_IF_INDEX)
	// retvalNoSuchFIB is VNET_API_ERROR_NO_SUCH_FIB (-3): the VRF table
	// does not exist.
	retvalNoSuchFIB = int32(api.NO_SUCH_FIB)
	// retvalNoSuchEntry is VNET_API_ERROR_NO_SUCH_ENTRY (-6): deleting
	// something that is not there.
	retvalNoSuchEntry = int32(api.NO_SUCH_ENTRY)
	// retvalInvalidValue is VNET_API_ERROR_INVALID_VALUE (-7).
	retvalInvalidValue = int32(api.INVALID_VALUE)
	// retvalUnimplemented is VNET_API_ERROR_UNIMPLEMENTED (-9): sent for
	// every message of the table the simulator has no handler for.
	retvalUnimplemented = int32(api.UNIMPLEMENTED)
	// retvalInvalidSwIfIndex2 is VNET_API_ERROR_INVALID_SW_IF_INDEX_2
	// (-10): the second interface of a request is unknown.
	retvalInvalidSwIfIndex2 = int32(api.INVALID_SW_IF_INDEX_2)
	// retvalUnexpectedIntfState is VNET_API_ERROR_UNEXPECTED_INTF_STATE
	// (-74): sw_interface_set_unnumbered between interfaces of different
	// IPv4 or IPv6 tables.
	retvalUnexpectedIntfState = int32(api.UNEXPECTED_INTF_STATE)
	// retvalSyscallError1 is VNET_API_ERROR_SYSCALL_ERROR_1 (-11), what
	// af_packet_delete returns for an unknown host interface.
	retvalSyscallError1 = int32(api.SYSCALL_ERROR_1)
	// retvalSyscallError2 is VNET_API_ERROR_SYSCALL_ERROR_2 (-12), what
	// tap creation returns when the host namespace cannot be opened.
	retvalSyscallError2 = int32(api.SYSCALL_ERROR_2)
	// retvalSyscallError3 is VNET_API_ERROR_SYSCALL_ERROR_3 (-13), what
	// tap creation returns when the host side cannot be set up.
	retvalSyscallError3 = int32(api.SYSCALL_ERROR_3)
	// retvalFeatureDisabled is VNET_API_ERROR_FEATURE_DISABLED (-30),
	// e.g. hw_interface_set_mtu on a non-Ethernet interface.
	retvalFeatureDisabled = int32(api.FEATURE_DISABLED)
	// retvalInvalidRegistration is VNET_API_ERROR_INVALID_REGISTRATION
	// (-31): a requested loopback instance is taken.
	retvalInvalidRegistration = int32(api.INVALID_REGISTRATION)
	// retvalAddressNotFoundForInterface is
	// VNET_API_ERROR_ADDRESS_NOT_FOUND_FOR_INTERFACE (-60).
	retvalAddressNotFoundForInterface = int32(api.ADDRESS_NOT_FOUND_FOR_INTERFACE)
	// retvalAddressLengthMismatch is
	// VNET_API_ERROR_ADDRESS_LENGTH_MISMATCH (-59): a link-local IPv6
	// address whose length is not 128.
	retvalAddressLengthMismatch = int32(api.ADDRESS_LENGTH_MISMATCH)
	// retvalAddressNotDeletable is VNET_API_ERROR_ADDRESS_NOT_DELETABLE
	// (-61): deleting the interface's current link-local address.
	retvalAddressNotDeletable = int32(api.ADDRESS_NOT_DELETABLE)
	// retvalIP6NotEnabled is VNET_API_ERROR_IP6_NOT_ENABLED (-62).
	retvalIP6NotEnabled = int32(api.IP6_NOT_ENABLED)
	// retvalInvalidInterface is VNET_API_ERROR_INVALID_INTERFACE (-71).
	retvalInvalidInterface = int32(api.INVALID_INTERFACE)
	// retvalTunnelExist is VNET_API_ERROR_TUNNEL_EXIST (-75).
	retvalTunnelExist = int32(api.TUNNEL_EXIST)
	// retvalInvalidDecapNext is VNET_API_ERROR_INVALID_DECAP_NEXT (-76).
	retvalInvalidDecapNext = int32(api.INVALID_DECAP_NEXT)
	// retvalIfAlreadyExists is VNET_API_ERROR_IF_ALREADY_EXISTS (-79).
	retvalIfAlreadyExists = int32(api.IF_ALREADY_EXISTS)
	// retvalValueExist is VNET_API_ERROR_VALUE_EXIST (-81): duplicate
	// NAT address, mapping or interface feature.
	retvalValueExist = int32(api.VALUE_EXIST)
	// retvalSameSrcDst is VNET_API_ERROR_SAME_SRC_DST (-82).
	retvalSameSrcDst = int32(api.SAME_SRC_DST)
	// retvalAddressInUse is VNET_API_ERROR_ADDRESS_IN_USE (-105): an
	// interface address overlaps one of another interface in the table.
	retvalAddressInUse = int32(api.ADDRESS_IN_USE)
	// retvalAddressFoundForInterface is
	// VNET_API_ERROR_ADDRESS_FOUND_FOR_INTERFACE (-114): an interface
	// with addresses cannot change its VRF.
	retvalAddressFoundForInterface = int32(api.ADDRESS_FOUND_FOR_INTERFACE)
	// retvalBDAlreadyExists is VNET_API_ERROR_BD_ALREADY_EXISTS (-119).
	retvalBDAlreadyExists = int32(api.BD_ALREADY_EXISTS)
	// retvalBDInUse is VNET_API_ERROR_BD_IN_USE (-120).
	retvalBDInUse = int32(api.BD_IN_USE)
	// retvalBDNotModifiable is VNET_API_ERROR_BD_NOT_MODIFIABLE (-121).
	retvalBDNotModifiable = int32(api.BD_NOT_MODIFIABLE)
	// retvalBDIDExceedMax is VNET_API_ERROR_BD_ID_EXCEED_MAX (-122).
	retvalBDIDExceedMax = int32(api.BD_ID_EXCEED_MAX)
	// retvalUnsupported is VNET_API_ERROR_UNSUPPORTED (-126): NAT44-ED
	// configuration while the plugin is disabled, unsupported NAT44 modes
	// and flag combinations.
	retvalUnsupported = int32(api.UNSUPPORTED)
	// retvalDuplicateIfAddress is VNET_API_ERROR_DUPLICATE_IF_ADDRESS
	// (-127): the interface already has this address.
	retvalDuplicateIfAddress = int32(api.DUPLICATE_IF_ADDRESS)
	// retvalInstanceInUse is VNET_API_ERROR_INSTANCE_IN_USE (-147).
	retvalInstanceInUse = int32(api.INSTANCE_IN_USE)
	// retvalNonEthernet is VNET_API_ERROR_NON_ETHERNET (-151).
	retvalNonEthernet = int32(api.NON_ETHERNET)
	// retvalBDAlreadyHasBVI is VNET_API_ERROR_BD_ALREADY_HAS_BVI (-152).
	retvalBDAlreadyHasBVI = int32(api.BD_ALREADY_HAS_BVI)
	// retvalFeatureAlreadyDisabled is
	// VNET_API_ERROR_FEATURE_ALREADY_DISABLED (-169): disabling NAT44-ED
	// when it is not enabled.
	retvalFeatureAlreadyDisabled = int32(api.FEATURE_ALREADY_DISABLED)
	// retvalFeatureAlreadyEnabled is
	// VNET_API_ERROR_FEATURE_ALREADY_ENABLED (-170): enabling NAT44-ED twice.
	retvalFeatureAlreadyEnabled = int32(api.FEATURE_ALREADY_ENABLED)
	// retvalInvalidAddressFamily is VNET_API_ERROR_INVALID_ADDRESS_FAMILY
	// (-97): an address family that is neither IPv4 nor IPv6 (cnat endpoints).
	retvalInvalidAddressFamily = int32(api.INVALID_ADDRESS_FAMILY)
	// retvalInvalidProtocol is VNET_API_ERROR_INVALID_PROTOCOL (-153): an IP
	// protocol number ip_proto_decode does not know (cnat translations).
	retvalInvalidProtocol = int32(api.INVALID_PROTOCOL)
	// retvalNoPathsInRoute is VNET_API_ERROR_NO_PATHS_IN_ROUTE (-172):
	// adding a route without paths. The code is newer than govpp's error
	// table, which therefore prints it as a bare number.
	retvalNoPathsInRoute int32 = -172
)
