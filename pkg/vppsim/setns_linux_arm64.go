package vppsim

// sysSetns is the setns(2) system call number on linux/arm64.
const sysSetns = 268
