package data

// Stream tags keep the random streams drawn from one seed apart.
const (
	tagShard   = 0x5348415244 // "SHARD": which images a rank owns
	tagEpoch   = 0x45504f4348 // "EPOCH": per-epoch order within a shard
	tagAugment = 0x4155474d   // "AUGM": crop offsets and mirror flips
	tagProto   = 0x50524f54   // "PROT": synthetic class patterns
	tagSample  = 0x53414d50   // "SAMP": synthetic samples
	tagSkip    = 0x534b4950   // "SKIP": rand_skip's start position
)

// mix hashes a seed with a stream tag (SplitMix64's finaliser), so that
// nearby seeds and tags give unrelated streams.
func mix(seed, tag uint64) uint64 {
	z := seed ^ (tag+1)*0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}
