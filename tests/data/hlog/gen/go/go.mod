module benchbook/hlog-gen

go 1.21

require github.com/HdrHistogram/hdrhistogram-go v1.1.2 // indirect
