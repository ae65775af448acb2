/* Anonymous RSS per thread: N threads each allocate 100 blocks of 32 bytes and
 * wait; prints (RssAnon with the threads alive - before) / N. Not part of the
 * build: cc -O2 bench/thread_rss.c -o /tmp/thread_rss -lpthread &&
 * LD_PRELOAD=build/src/libmallard.so /tmp/thread_rss 32 (thread stacks included). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
static pthread_barrier_t b1,b2;
static void* worker(void* a){ void* p[100]; for(int i=0;i<100;i++) p[i]=malloc(32); pthread_barrier_wait(&b1); pthread_barrier_wait(&b2); for(int i=0;i<100;i++) free(p[i]); return a; }
static long anon(){ FILE* f=fopen("/proc/self/status","r"); char line[256]; long v=0; while(fgets(line,sizeof line,f)) if(!strncmp(line,"RssAnon",7)) v=atol(line+8); fclose(f); return v; }
int main(int argc,char**argv){ int n=atoi(argv[1]); pthread_barrier_init(&b1,0,n+1); pthread_barrier_init(&b2,0,n+1);
 long before=anon(); pthread_t t[256]; for(int i=0;i<n;i++) pthread_create(&t[i],0,worker,0); pthread_barrier_wait(&b1);
 long during=anon(); pthread_barrier_wait(&b2); for(int i=0;i<n;i++) pthread_join(t[i],0);
 printf("threads %d: anon before %ld kB, with threads %ld kB, per thread %.1f kB\n", n, before, during, (double)(during-before)/n); }
