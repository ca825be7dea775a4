// dnnl_norm_bench times oneDNN 2.6 batch normalization (NCHW, nChw16c, and
// nChw16c with the reorders an NCHW caller needs), softmax and the
// NCHW<->nChw16c reorders on one thread: the oneDNN side of the BatchNorm and
// softmax decision in docs/benchmarks.md. Build and run:
//   gcc -O2 -fopenmp scripts/dnnl_norm_bench.c -o /tmp/dnnl_norm_bench -ldnnl
//   timeout 100 chrt -f 10 /tmp/dnnl_norm_bench
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <omp.h>
#define CK(x) do { dnnl_status_t s_ = (x); if (s_) { fprintf(stderr, "%s: %d line %d\n", #x, s_, __LINE__); exit(1);} } while (0)
static dnnl_engine_t eng; static dnnl_stream_t st;
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e3+t.tv_nsec/1e6;}
static dnnl_memory_t mem(const dnnl_memory_desc_t *md){dnnl_memory_t m;CK(dnnl_memory_create(&m,md,eng,DNNL_MEMORY_ALLOCATE));
  void*h;dnnl_memory_get_data_handle(m,&h);size_t n=dnnl_memory_desc_get_size(md);float*f=h;for(size_t i=0;i<n/4;i++)f[i]=(float)((i*2654435761u)%1000)/500.f-1.f;return m;}
static double tm(dnnl_primitive_t p,int n,dnnl_exec_arg_t*a,int reps){dnnl_primitive_execute(p,st,n,a);double best=1e30;
  for(int r=0;r<reps;r++){double t=now();dnnl_primitive_execute(p,st,n,a);dnnl_stream_wait(st);t=now()-t;if(t<best)best=t;}return best;}
static const char*impl(dnnl_primitive_desc_t pd){const char*s;dnnl_primitive_desc_query(pd,dnnl_query_impl_info_str,0,&s);return s;}
static void bn(int N,int C,int H,int W,dnnl_format_tag_t tag,const char*name){
  dnnl_dims_t d={N,C,H,W};dnnl_memory_desc_t md;CK(dnnl_memory_desc_init_by_tag(&md,4,d,dnnl_f32,tag));
  dnnl_batch_normalization_desc_t fd,bd;dnnl_primitive_desc_t fpd,bpd;dnnl_primitive_t f,b;
  CK(dnnl_batch_normalization_forward_desc_init(&fd,dnnl_forward_training,&md,1e-5f,0));
  CK(dnnl_primitive_desc_create(&fpd,&fd,NULL,eng,NULL));CK(dnnl_primitive_create(&f,fpd));
  CK(dnnl_batch_normalization_backward_desc_init(&bd,dnnl_backward_data,&md,&md,1e-5f,0));
  CK(dnnl_primitive_desc_create(&bpd,&bd,NULL,eng,fpd));CK(dnnl_primitive_create(&b,bpd));
  dnnl_memory_t x=mem(&md),y=mem(&md),dy=mem(&md),dx=mem(&md);
  const dnnl_memory_desc_t*mmd=dnnl_primitive_desc_query_md(fpd,dnnl_query_dst_md,1);
  dnnl_memory_t mu=mem(mmd),var=mem(mmd);
  dnnl_exec_arg_t fa[]={{DNNL_ARG_SRC,x},{DNNL_ARG_DST,y},{DNNL_ARG_MEAN,mu},{DNNL_ARG_VARIANCE,var}};
  dnnl_exec_arg_t ba[]={{DNNL_ARG_SRC,x},{DNNL_ARG_DIFF_DST,dy},{DNNL_ARG_MEAN,mu},{DNNL_ARG_VARIANCE,var},{DNNL_ARG_DIFF_SRC,dx}};
  double tf=tm(f,4,fa,7),tb=tm(b,5,ba,7);
  // global stats forward (inference-like)
  dnnl_batch_normalization_desc_t gd;dnnl_primitive_desc_t gpd;dnnl_primitive_t g;
  CK(dnnl_batch_normalization_forward_desc_init(&gd,dnnl_forward_training,&md,1e-5f,dnnl_use_global_stats));
  CK(dnnl_primitive_desc_create(&gpd,&gd,NULL,eng,NULL));CK(dnnl_primitive_create(&g,gpd));
  double tg=tm(g,4,fa,7);
  printf("BN %s %dx%dx%dx%d: fwd %.3f ms bwd %.3f ms globalfwd %.3f ms  [%s | %s]\n",name,N,C,H,W,tf,tb,tg,impl(fpd),impl(bpd));
}
static void reo(int N,int C,int H,int W,dnnl_format_tag_t tag){
  dnnl_dims_t d={N,C,H,W};dnnl_memory_desc_t a,b;CK(dnnl_memory_desc_init_by_tag(&a,4,d,dnnl_f32,dnnl_nchw));CK(dnnl_memory_desc_init_by_tag(&b,4,d,dnnl_f32,tag));
  dnnl_primitive_desc_t p1,p2;dnnl_primitive_t r1,r2;CK(dnnl_reorder_primitive_desc_create(&p1,&a,eng,&b,eng,NULL));CK(dnnl_primitive_create(&r1,p1));
  CK(dnnl_reorder_primitive_desc_create(&p2,&b,eng,&a,eng,NULL));CK(dnnl_primitive_create(&r2,p2));
  dnnl_memory_t x=mem(&a),y=mem(&b);dnnl_exec_arg_t a1[]={{DNNL_ARG_FROM,x},{DNNL_ARG_TO,y}},a2[]={{DNNL_ARG_FROM,y},{DNNL_ARG_TO,x}};
  printf("reorder %dx%dx%dx%d nchw->blocked %.3f ms, back %.3f ms\n",N,C,H,W,tm(r1,2,a1,7),tm(r2,2,a2,7));
}
static void sm(int N,int C){
  dnnl_dims_t d={N,C};dnnl_memory_desc_t md;CK(dnnl_memory_desc_init_by_tag(&md,2,d,dnnl_f32,dnnl_ab));
  dnnl_softmax_desc_t fd,bd;dnnl_primitive_desc_t fpd,bpd;dnnl_primitive_t f,b;
  CK(dnnl_softmax_forward_desc_init(&fd,dnnl_forward_training,&md,1));CK(dnnl_primitive_desc_create(&fpd,&fd,NULL,eng,NULL));CK(dnnl_primitive_create(&f,fpd));
  CK(dnnl_softmax_backward_desc_init(&bd,&md,&md,1));CK(dnnl_primitive_desc_create(&bpd,&bd,NULL,eng,fpd));CK(dnnl_primitive_create(&b,bpd));
  dnnl_memory_t x=mem(&md),y=mem(&md),dy=mem(&md),dx=mem(&md);
  dnnl_exec_arg_t fa[]={{DNNL_ARG_SRC,x},{DNNL_ARG_DST,y}},ba[]={{DNNL_ARG_DST,y},{DNNL_ARG_DIFF_DST,dy},{DNNL_ARG_DIFF_SRC,dx}};
  printf("softmax %dx%d: fwd %.4f ms bwd %.4f ms [%s | %s]\n",N,C,tm(f,2,fa,21),tm(b,3,ba,21),impl(fpd),impl(bpd));
}
// chain: BN on the blocked layout with the reorders an NCHW caller needs.
static void chain(int N,int C,int H,int W){
  dnnl_dims_t d={N,C,H,W};dnnl_memory_desc_t a,b;CK(dnnl_memory_desc_init_by_tag(&a,4,d,dnnl_f32,dnnl_nchw));CK(dnnl_memory_desc_init_by_tag(&b,4,d,dnnl_f32,dnnl_nChw16c));
  dnnl_primitive_desc_t p1,p2;dnnl_primitive_t r1,r2;CK(dnnl_reorder_primitive_desc_create(&p1,&a,eng,&b,eng,NULL));CK(dnnl_primitive_create(&r1,p1));
  CK(dnnl_reorder_primitive_desc_create(&p2,&b,eng,&a,eng,NULL));CK(dnnl_primitive_create(&r2,p2));
  dnnl_batch_normalization_desc_t fd,bd;dnnl_primitive_desc_t fpd,bpd;dnnl_primitive_t f,bw;
  CK(dnnl_batch_normalization_forward_desc_init(&fd,dnnl_forward_training,&b,1e-5f,0));CK(dnnl_primitive_desc_create(&fpd,&fd,NULL,eng,NULL));CK(dnnl_primitive_create(&f,fpd));
  CK(dnnl_batch_normalization_backward_desc_init(&bd,dnnl_backward_data,&b,&b,1e-5f,0));CK(dnnl_primitive_desc_create(&bpd,&bd,NULL,eng,fpd));CK(dnnl_primitive_create(&bw,bpd));
  dnnl_memory_t x=mem(&a),xb=mem(&b),yb=mem(&b),dyb=mem(&b),dxb=mem(&b);
  const dnnl_memory_desc_t*mmd=dnnl_primitive_desc_query_md(fpd,dnnl_query_dst_md,1);dnnl_memory_t mu=mem(mmd),var=mem(mmd);
  dnnl_exec_arg_t ri[]={{DNNL_ARG_FROM,x},{DNNL_ARG_TO,xb}},ro[]={{DNNL_ARG_FROM,yb},{DNNL_ARG_TO,x}};
  dnnl_exec_arg_t di[]={{DNNL_ARG_FROM,x},{DNNL_ARG_TO,dyb}},dout[]={{DNNL_ARG_FROM,dxb},{DNNL_ARG_TO,x}};
  dnnl_exec_arg_t fa[]={{DNNL_ARG_SRC,xb},{DNNL_ARG_DST,yb},{DNNL_ARG_MEAN,mu},{DNNL_ARG_VARIANCE,var}};
  dnnl_exec_arg_t ba[]={{DNNL_ARG_SRC,xb},{DNNL_ARG_DIFF_DST,dyb},{DNNL_ARG_MEAN,mu},{DNNL_ARG_VARIANCE,var},{DNNL_ARG_DIFF_SRC,dxb}};
  double bf=1e30,bb=1e30;
  for(int r=0;r<8;r++){double t=now();dnnl_primitive_execute(r1,st,2,ri);dnnl_primitive_execute(f,st,4,fa);dnnl_primitive_execute(r2,st,2,ro);t=now()-t;if(r&&t<bf)bf=t;
    t=now();dnnl_primitive_execute(r1,st,2,di);dnnl_primitive_execute(bw,st,5,ba);dnnl_primitive_execute(r2,st,2,dout);t=now()-t;if(r&&t<bb)bb=t;}
  printf("BN chain nchw->nChw16c->nchw %dx%dx%dx%d: fwd %.3f ms bwd %.3f ms (min of 7)\n",N,C,H,W,bf,bb);
}
int main(){omp_set_num_threads(1);CK(dnnl_engine_create(&eng,dnnl_cpu,0));CK(dnnl_stream_create(&st,eng,0));
  bn(16,64,56,56,dnnl_nchw,"nchw");bn(16,64,56,56,dnnl_nChw16c,"nChw16c");reo(16,64,56,56,dnnl_nChw16c);
  bn(16,256,14,14,dnnl_nchw,"nchw");bn(16,256,14,14,dnnl_nChw16c,"nChw16c");reo(16,256,14,14,dnnl_nChw16c);
  chain(16,64,56,56);chain(16,256,14,14);chain(16,64,112,112);
  sm(32,1000);sm(16,1000);sm(100,10);return 0;}
