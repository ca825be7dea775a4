package main

const shmUsage = "with --transport tcp (and dsgd worker): on, ranks that share a host exchange data through shared memory (/dev/shm) and only ranks on different hosts over TCP; off, every pair over TCP"

const smbShmUsage = "on: the buffers live in shared memory (/dev/shm, unlinked at once) and clients on this host map them, reading and writing by one memory copy with only the locking over TCP, as ShmCaffe's SMB; off: every byte over TCP"
