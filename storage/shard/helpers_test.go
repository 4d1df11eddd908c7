package shard

import "github.com/strata-store/strata/internal/testrows"

var (
	userSchema   = testrows.UserSchema
	tableSchema  = testrows.TableSchema
	checkedAlloc = testrows.CheckedAlloc
	rows         = testrows.Rows
	stampedRows  = testrows.StampedRows
	badOffsets   = testrows.BadOffsets
)
