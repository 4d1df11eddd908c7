// Object keys of a shard (the layout is in doc.go) and shard identities.
package shard

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

const (
	shardsDir = "_shards/"
	WALDir    = "_wal/"
)

// shardNamespace derives shard ids from instance ids (UUIDv5), so a worker keeps its shard across
// restarts and two instance ids never share one.
var shardNamespace = uuid.MustParse("6f3c1c7e-5b1a-4f0e-9a57-2f6a3c1d9e41")

// ShardID is the shard a worker instance writes in every store.
func ShardID(instance string) string {
	return uuid.NewSHA1(shardNamespace, []byte(instance)).String()
}

func shardMarker(shard string) string { return shardsDir + shard }

func ManifestKey(shard string, v uint64) string {
	return fmt.Sprintf("%s%s/manifest/%020d.json", WALDir, shard, v)
}

func manifestPrefix(shard string) string { return WALDir + shard + "/manifest/" }

func EntryKey(shard string, pos uint64) string {
	return fmt.Sprintf("%s%s/entries/%020d.arrows", WALDir, shard, pos)
}

func EntryPrefix(shard string) string { return WALDir + shard + "/entries/" }

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

// GenerationsPrefix holds a shard's generation files (key files; format 1 rows files).
func GenerationsPrefix(shard string) string { return WALDir + shard + "/gens/" }

func GenerationKeysPath(shard string, gen uint64, random string) string {
	return fmt.Sprintf("%s%s/gens/%020d-%s.keys", WALDir, shard, gen, random)
}

// randomName makes a generation key file's name unique, so a seal retried at the same generation
// number never overwrites an earlier attempt's file.
func randomName() string {
	var b [10]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
