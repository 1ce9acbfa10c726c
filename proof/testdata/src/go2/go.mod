module example.com/fx2

go 1.22
