use super::*;

#[test]
fn connections_per_address_are_bounded_and_given_back() {
    let limit = ConnectionLimit::new(2);
    let a: IpAddr = "10.0.0.1".parse().unwrap();
    let b: IpAddr = "10.0.0.2".parse().unwrap();
    let first = limit.take(a).unwrap();
    let _second = limit.take(a).unwrap();
    assert_eq!(
        limit.take(a).err(),
        Some(Refusal::PerClient),
        "a third from the same address"
    );
    let _other = limit.take(b).unwrap();
    drop(first);
    assert!(limit.take(a).is_ok(), "a slot came back");
    let unbounded = ConnectionLimit::new(0);
    let held: Vec<_> = (0..100).map(|_| unbounded.take(a).unwrap()).collect();
    drop(held);
    let open = unbounded.open.lock().unwrap();
    assert!(open.by_ip.is_empty());
    assert_eq!(open.total, 0);
}

#[test]
fn connections_in_all_are_bounded() {
    let limit = ConnectionLimit::with_total(0, 3);
    let held: Vec<_> = (1..=3u8)
        .map(|i| limit.take(IpAddr::from([10, 0, 0, i])).unwrap())
        .collect();
    assert_eq!(
        limit.take("10.0.0.9".parse().unwrap()).err(),
        Some(Refusal::Total)
    );
    drop(held);
    assert!(limit.take("10.0.0.9".parse().unwrap()).is_ok());
}

#[test]
fn one_address_never_gets_every_descriptor() {
    assert_eq!(automatic_total(Some(1024)), 1024 - DESCRIPTOR_RESERVE);
    assert_eq!(automatic_total(Some(10)), 16);
    assert_eq!(automatic_total(None), 0);
    // 512 descriptors: 448 connections, at most 224 from one address.
    let total = automatic_total(Some(512));
    assert_eq!(effective_per_client(256, total), 224);
    assert_eq!(effective_per_client(0, total), 224);
    assert_eq!(effective_per_client(256, 1_000_000), 256);
    assert_eq!(effective_per_client(0, 0), 0);
    assert_eq!(effective_per_client(7, 0), 7);
}

#[test]
fn the_http2_opening_is_the_preface_and_one_settings_frame() {
    let mut opening = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    opening.extend_from_slice(&[0, 0, 12, 4, 0, 0, 0, 0, 0]);
    opening.extend_from_slice(&[0; 12]);
    for split in [1, 5, 24, 32, 33, 40, opening.len()] {
        let mut count = PrefaceCount {
            seen: 0,
            head: [0; PREFACE_HEAD],
        };
        let mut done = false;
        for chunk in opening[..opening.len() - 1].chunks(split) {
            done = count.take(chunk);
        }
        assert!(!done, "one byte short, in chunks of {split}");
        assert!(count.take(&opening[opening.len() - 1..]), "{split}");
    }
}
