// Object keys of the MemWAL (see the package comment) and shard identities.
package memwal

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

const (
	shardsDir = "_shards/"
	walDir    = "_wal/"
)

// shardNamespace derives shard ids from instance ids (UUIDv5), so a worker keeps its shard across
// restarts and two instance ids never share one.
var shardNamespace = uuid.MustParse("6f3c1c7e-5b1a-4f0e-9a57-2f6a3c1d9e41")

// ShardID is the shard a worker instance writes in every store.
func ShardID(instance string) string {
	return uuid.NewSHA1(shardNamespace, []byte(instance)).String()
}

func shardMarker(shard string) string { return shardsDir + shard }

func manifestKey(shard string, v uint64) string {
	return fmt.Sprintf("%s%s/manifest/%020d.json", walDir, shard, v)
}

func manifestPrefix(shard string) string { return walDir + shard + "/manifest/" }

func entryKey(shard string, pos uint64) string {
	return fmt.Sprintf("%s%s/entries/%020d.arrows", walDir, shard, pos)
}

func entryPrefix(shard string) string { return walDir + shard + "/entries/" }

func parseNumbered(key, prefix, suffix string) (uint64, bool) {
	name, ok := strings.CutPrefix(key, prefix)
	if !ok {
		return 0, false
	}
	name, ok = strings.CutSuffix(name, suffix)
	if !ok || len(name) != 20 {
		return 0, false
	}
	v, err := strconv.ParseUint(name, 10, 64)
	return v, err == nil
}

// generationsPrefix holds a shard's generation files (key files; format 1 rows files).
func generationsPrefix(shard string) string { return walDir + shard + "/gens/" }

func generationKeysPath(shard string, gen uint64, random string) string {
	return fmt.Sprintf("%s%s/gens/%020d-%s.keys", walDir, shard, gen, random)
}
