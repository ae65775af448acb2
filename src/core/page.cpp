#include "core/page.hpp"

#include "core/segment.hpp"
#include "core/size_class.hpp"
#include "core/heap.hpp"

namespace mallard {

Page g_empty_page = {};

void page_init(Page* page, Heap* heap, unsigned size_class) {
  Segment* segment = page->segment;
  size_t index = static_cast<size_t>(page - segment->pages);
  size_t block_size = class_size(size_class);
  page->free = nullptr;
  page->local_free = nullptr;
  page->used = 0;
  page->flags = 0;
  page->size_class = static_cast<uint8_t>(size_class);
  page->block_size = static_cast<uint32_t>(block_size);
  page->block_magic = kSizeClasses.magic[size_class];
  page->carved_bytes = 0;
  page->capacity = 0;
  page->reserved = static_cast<uint32_t>(page_area_size(segment, index) / block_size);
  page->heap = heap;
  page->next = nullptr;
  page->prev = nullptr;
}

void page_extend(Page* page) {
  constexpr size_t kExtendBytes = 16 * 1024;
  size_t size = page->block_size;
  size_t count = kExtendBytes / size;
  if (count == 0) count = 1;
  size_t left = page->reserved - page->capacity;
  if (count > left) count = left;
  if (count == 0) return;
  uint8_t* first = page->start + size_t{page->capacity} * size;
  // Thread the new blocks in address order, ahead of whatever is free.
  auto* block = reinterpret_cast<Block*>(first);
  for (size_t i = 0; i + 1 < count; ++i) {
    auto* next = reinterpret_cast<Block*>(first + (i + 1) * size);
    block->next = next;
    block->key = 0;
    block = next;
  }
  block->next = page->free;
  block->key = 0;
  page->free = reinterpret_cast<Block*>(first);
  page->capacity += static_cast<uint32_t>(count);
  page->carved_bytes = static_cast<uint32_t>(size_t{page->capacity} * size);
}

namespace {

// Direct slots covering a class: the sizes (slot*8) that map to it.
void direct_update(Heap* heap, unsigned size_class) {
  if (class_size(size_class) > kDirectSizeMax) return;
  Page* page = heap->queues[size_class].first;
  if (page == nullptr) page = &g_empty_page;
  size_t hi = class_size(size_class) / 8;
  for (size_t slot = hi; slot > 0 && g_direct_class[slot] == size_class; --slot) {
    heap->direct[slot] = page;
  }
  if (size_class == 1) heap->direct[0] = page;
}

}  // namespace

void queue_push_front(Heap* heap, unsigned size_class, Page* page) {
  PageQueue* q = &heap->queues[size_class];
  page->prev = nullptr;
  page->next = q->first;
  if (q->first != nullptr) q->first->prev = page; else q->last = page;
  q->first = page;
  direct_update(heap, size_class);
}

void queue_push_back(Heap* heap, unsigned size_class, Page* page) {
  PageQueue* q = &heap->queues[size_class];
  page->next = nullptr;
  page->prev = q->last;
  if (q->last != nullptr) q->last->next = page; else q->first = page;
  q->last = page;
  if (q->first == page) direct_update(heap, size_class);
}

void queue_remove(Heap* heap, unsigned size_class, Page* page) {
  PageQueue* q = &heap->queues[size_class];
  bool was_first = q->first == page;
  if (page->prev != nullptr) page->prev->next = page->next; else q->first = page->next;
  if (page->next != nullptr) page->next->prev = page->prev; else q->last = page->prev;
  page->next = page->prev = nullptr;
  if (was_first) direct_update(heap, size_class);
}

void page_list_push_back(PageList* list, Page* page) {
  page->next = nullptr;
  page->prev = list->last;
  if (list->last != nullptr) list->last->next = page; else list->first = page;
  list->last = page;
  ++list->count;
}

void page_list_remove(PageList* list, Page* page) {
  if (page->prev != nullptr) page->prev->next = page->next; else list->first = page->next;
  if (page->next != nullptr) page->next->prev = page->prev; else list->last = page->prev;
  page->next = page->prev = nullptr;
  --list->count;
}

}  // namespace mallard
