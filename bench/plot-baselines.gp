# plot-baselines.gp - how many times faster a shmfilter check is than each
# baseline's, per filter; one key per call, and 100 keys per call.
#   gnuplot -e "dir='OUT'" bench/plot-baselines.gp
# Data and styles: ratios-*.dat and ratios-*.style, written by report.py.
set terminal pngcairo size 1500,650 font ",10"
set output dir."/baselines.png"
set datafile missing "?"
set key autotitle columnhead below
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set logscale y
set yrange [1:*]
set grid ytics mytics
set ylabel "baseline median / shmfilter median (log scale)"
set xtics rotate by -20
set multiplot layout 1,2 title "shmfilter against each baseline: speed-up of a check (16-byte keys, same run)" font ",13"
set title "one key per call"
load dir."/ratios-1.style"
plot for [i=2:words(lcs) + 1] dir."/ratios-1.dat" using i:xtic(1) lc rgb word(lcs, i - 1)
set title "100 keys per call"
load dir."/ratios-100.style"
plot for [i=2:words(lcs) + 1] dir."/ratios-100.dat" using i:xtic(1) lc rgb word(lcs, i - 1)
unset multiplot
