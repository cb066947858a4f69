#include "hook/bounded_queue.h"

#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace xtimer {
namespace hook {
namespace {

TEST(BoundedQueueTest, FifoAndBounds) {
  BoundedQueue<int> q(3);  // rounded up to 4
  EXPECT_EQ(q.capacity(), 4u);
  int v;
  EXPECT_FALSE(q.Pop(&v));
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(q.Push(i));
  EXPECT_FALSE(q.Push(99));  // full: the caller drops
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(q.Pop(&v));
    EXPECT_EQ(v, i);
  }
  EXPECT_FALSE(q.Pop(&v));
}

TEST(BoundedQueueTest, PushWithFillsTheCellAndIsNotCalledWhenFull) {
  BoundedQueue<int> q(2);
  int calls = 0;
  auto fill = [&calls](int* cell) { *cell = 10 + calls++; };
  EXPECT_TRUE(q.PushWith(fill));
  EXPECT_TRUE(q.PushWith(fill));
  EXPECT_FALSE(q.PushWith(fill));  // full
  EXPECT_EQ(calls, 2);
  int v;
  ASSERT_TRUE(q.Pop(&v));
  EXPECT_EQ(v, 10);
  ASSERT_TRUE(q.Pop(&v));
  EXPECT_EQ(v, 11);
}

TEST(BoundedQueueTest, ManyProducersOneConsumer) {
  BoundedQueue<uint64_t> q(256);
  constexpr int kThreads = 4;
  constexpr uint64_t kPerThread = 20000;
  std::atomic<bool> done{false};
  std::vector<uint64_t> next(kThreads, 0);
  uint64_t received = 0;
  std::thread consumer([&] {
    uint64_t v;
    while (!done.load() || q.SizeApprox() > 0) {
      while (q.Pop(&v)) {
        int t = static_cast<int>(v >> 32);
        uint64_t i = v & 0xffffffff;
        ASSERT_EQ(i, next[t]);  // per-producer order is kept
        next[t] = i + 1;
        ++received;
      }
    }
  });
  std::vector<std::thread> producers;
  for (int t = 0; t < kThreads; ++t) {
    producers.emplace_back([&q, t] {
      for (uint64_t i = 0; i < kPerThread; ++i) {
        while (!q.Push((static_cast<uint64_t>(t) << 32) | i)) std::this_thread::yield();
      }
    });
  }
  for (auto& p : producers) p.join();
  done.store(true);
  consumer.join();
  EXPECT_EQ(received, kThreads * kPerThread);
}

}  // namespace
}  // namespace hook
}  // namespace xtimer
