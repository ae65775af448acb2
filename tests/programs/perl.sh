#!/usr/bin/env bash
# perl one-liner workload: a 200,000-key hash of growing strings, sorting,
# joins and a global regex substitution over a large string.
source "$(dirname "$0")/common.sh"
need perl

compare_runs perl 1048576 env PERL_HASH_SEED=0 PERL_PERTURB_KEYS=0 perl -e '
  srand(7);
  my %h;
  for my $i (1 .. 200000) {
    my $k = join "", map { chr(97 + int(rand(26))) } 1 .. 6;
    $h{$k} .= "$i,";
  }
  my @keys = sort keys %h;
  my $total = 0;
  $total += length($h{$_}) for @keys;
  my $s = join ";", map { "$_=$h{$_}" } @keys;
  (my $u = $s) =~ s/(\d+)/<$1>/g;
  delete @h{ @keys[0 .. $#keys / 2] };
  my @lines = map { scalar reverse $_ } split /;/, $u;
  print scalar(@keys), " $total ", length($u), " ", scalar(keys %h), " ", scalar(@lines), "\n";
  print substr($u, 0, 200), "\n", $lines[-1], "\n";
'
