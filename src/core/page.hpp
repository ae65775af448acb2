// Page-level operations: setting a page up for a size class, carving more of
// its blocks into the free list, and the page queues of a heap.
#pragma once

#include "core/types.hpp"

namespace mallard {

extern Page g_empty_page;

// `aligned_start`: no colour, so that the page start, and every block, is
// aligned to the largest power of two dividing the class size (up to 8 KiB);
// for aligned requests served from medium pages (see page_colour).
void page_init(Page* page, Heap* heap, unsigned size_class, bool aligned_start = false);

// Threads up to 4 KiB more (at least one block) of the page's untouched
// blocks into page->free (lazily, so a fresh page costs RSS only for what is
// used).
void page_extend(Page* page);

// Queue operations keep heap->direct in step with each queue's first page.
void queue_push_front(Heap* heap, unsigned size_class, Page* page);
void queue_push_back(Heap* heap, unsigned size_class, Page* page);
void queue_remove(Heap* heap, unsigned size_class, Page* page);

void page_list_push_back(PageList* list, Page* page);
void page_list_remove(PageList* list, Page* page);

}  // namespace mallard
