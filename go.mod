module github.com/parsecdb/parsec

go 1.26

require github.com/klauspost/compress v1.20.3
