# plot-throughput.gp - checks per second against worker processes, one panel
# per filter: shmfilter beside each baseline.
#   gnuplot -e "dir='OUT'" bench/plot-throughput.gp
# Data and styles: throughput-*.dat and .style, and the list of filters in
# throughput-filters.txt, written by report.py.
filters = system("cat ".dir."/throughput-filters.txt")
n = words(filters)
set terminal pngcairo size 1300, 420 * n font ",10"
set output dir."/throughput.png"
set datafile missing "?"
set key autotitle columnhead outside right top vertical
set logscale y
set grid xtics ytics mytics
set xlabel "worker processes (each with its own handle or connection)"
set ylabel "checks per second, all workers (log scale)"
set xtics (1, 2, 4)
set xrange [0.8:4.2]
set format y "%.0s%c"
set rmargin 48
set multiplot layout n, 1 title "shmfilter against networked Redis: throughput (16-byte keys; solid: 1 key per call, dashed: 100)" font ",13"
do for [j = 1:n] {
	f = word(filters, j)
	set title f
	load dir."/throughput-".f.".style"
	plot for [i=2:words(lcs) + 1] dir."/throughput-".f.".dat" using 1:i with linespoints lw 2 pt 7 lc rgb word(lcs, i - 1) dt int(word(dts, i - 1))
}
unset multiplot
