package main

import "hash/crc32"

// crc32c is the snapshot format's checksum (CRC-32, Castagnoli).
func crc32c(b []byte) uint32 { return crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)) }
