package store

import (
	"hash/crc32"
	"strconv"
	"testing"

	"github.com/approvalbot/approvalbot/aah"
)

// shardOf is crc32.ChecksumIEEE of the id's bytes, modulo Shards: the data
// layout, which the string-walking form must not change.
func TestShardOfIsTheIDsCRC32(t *testing.T) {
	ids := []string{"", "a", "b1743", "req-42", "x:y.z_w-1", "héllo", string([]byte{0xff, 0x00, 0x80})}
	for i := range 2000 {
		ids = append(ids, "r"+strconv.Itoa(i))
	}
	for _, id := range ids {
		if got, want := shardOf(id), int(crc32.ChecksumIEEE([]byte(id))%Shards); got != want {
			t.Errorf("shardOf(%q) = %d, want %d", id, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { shardOf("b1743") }); n != 0 {
		t.Errorf("shardOf allocates %v times", n)
	}
}

// The keys formatted once per shard are the keys formatted on demand.
func TestShardKeysAsFormatted(t *testing.T) {
	k := newKeys("ab")
	for shard := range Shards {
		s := k.slot(shard)
		for got, want := range map[string]string{
			k.jobs(shard).due: s + ":jobs:due", k.jobs(shard).inflight: s + ":jobs:inflight",
			k.jobs(shard).lease: s + ":jobs:lease", k.jobs(shard).attempts: s + ":jobs:attempts",
			k.jobs(shard).dead: s + ":jobs:dead", k.openIndex(shard): s + ":idx:open",
			k.unnamedIndex(shard): s + ":idx:unnamed", k.deadlineIndex(shard): s + ":idx:deadline",
			k.events(shard): s + ":events", k.retention(shard): s + ":retention",
			k.auditShard(shard): s + ":audit", k.auditShardHead(shard): s + ":audit:head",
			k.auditShardBase(shard): s + ":audit-base", k.auditShardExported(shard): s + ":audit-exported",
			k.auditShardSeq(shard): s + ":audit-seq", k.auditShardPending(shard): s + ":audit-pending",
			k.statusIndex(shard, aah.StatusPending):   s + ":idx:status:pending",
			k.statusIndex(shard, aah.Status("other")): s + ":idx:status:other",
		} {
			if got != want {
				t.Errorf("shard %d: key %q, want %q", shard, got, want)
			}
		}
	}
}
