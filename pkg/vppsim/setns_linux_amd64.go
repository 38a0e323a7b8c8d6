package vppsim

// sysSetns is the setns(2) system call number on linux/amd64.
const sysSetns = 308
